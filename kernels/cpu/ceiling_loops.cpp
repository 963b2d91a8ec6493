// kernels/cpu/ceiling_loops.cpp — FMA and triad loops for the measured ceilings
// (kernels/cpu/ceiling_loops.h). The FMA loop uses intrinsics so that every
// operation is one fused multiply-add whatever -ffp-contract says (ISO C++ mode
// turns contraction off, and an unfused a*b+c would halve the rate measured).
#include "kernels/cpu/ceiling_loops.h"

#include <omp.h>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#elif defined(__ARM_NEON) && defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace tb::cpu {

#if defined(__AVX512F__)
const int kFmaLanes = 16;
const char* fma_loop_isa() { return "avx512f"; }
using Vec = __m512;
static inline Vec vload(const float* p) { return _mm512_loadu_ps(p); }
static inline void vstore(float* p, Vec v) { _mm512_storeu_ps(p, v); }
static inline Vec vset1(float x) { return _mm512_set1_ps(x); }
static inline Vec vfma(Vec x, Vec a, Vec b) { return _mm512_fmadd_ps(x, a, b); }
#elif defined(__AVX2__) && defined(__FMA__)
const int kFmaLanes = 8;
const char* fma_loop_isa() { return "avx2+fma"; }
using Vec = __m256;
static inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
static inline void vstore(float* p, Vec v) { _mm256_storeu_ps(p, v); }
static inline Vec vset1(float x) { return _mm256_set1_ps(x); }
static inline Vec vfma(Vec x, Vec a, Vec b) { return _mm256_fmadd_ps(x, a, b); }
#elif defined(__ARM_NEON) && defined(__aarch64__)
const int kFmaLanes = 4;
const char* fma_loop_isa() { return "neon"; }
using Vec = float32x4_t;
static inline Vec vload(const float* p) { return vld1q_f32(p); }
static inline void vstore(float* p, Vec v) { vst1q_f32(p, v); }
static inline Vec vset1(float x) { return vdupq_n_f32(x); }
static inline Vec vfma(Vec x, Vec a, Vec b) { return vfmaq_f32(b, x, a); }  // b + x * a, fused
#else
// GCC/Clang vector extension: the compiler may or may not fuse x * a + b here.
const int kFmaLanes = 4;
const char* fma_loop_isa() { return "generic"; }
typedef float Vec __attribute__((vector_size(16)));
static inline Vec vload(const float* p) {
  Vec v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
static inline void vstore(float* p, Vec v) { __builtin_memcpy(p, &v, sizeof v); }
static inline Vec vset1(float x) { return Vec{x, x, x, x}; }
static inline Vec vfma(Vec x, Vec a, Vec b) { return x * a + b; }
#endif

void fma_loop(int64_t iters, float a, float b, float* out) {
  constexpr int kMaxLanes = 16;
  alignas(64) float start[kFmaChains * kMaxLanes];
  for (int i = 0; i < kFmaChains * kFmaLanes; ++i) start[i] = 1.0f + static_cast<float>(i) / 1024.0f;
  const Vec va = vset1(a), vb = vset1(b);
  // Twelve named chains (not an array) keep every accumulator in a register.
  Vec c0 = vload(start + 0 * kFmaLanes), c1 = vload(start + 1 * kFmaLanes), c2 = vload(start + 2 * kFmaLanes),
      c3 = vload(start + 3 * kFmaLanes), c4 = vload(start + 4 * kFmaLanes), c5 = vload(start + 5 * kFmaLanes),
      c6 = vload(start + 6 * kFmaLanes), c7 = vload(start + 7 * kFmaLanes), c8 = vload(start + 8 * kFmaLanes),
      c9 = vload(start + 9 * kFmaLanes), c10 = vload(start + 10 * kFmaLanes), c11 = vload(start + 11 * kFmaLanes);
  static_assert(kFmaChains == 12, "fma_loop names its twelve chains");
  for (int64_t it = 0; it < iters; ++it) {
    c0 = vfma(c0, va, vb);
    c1 = vfma(c1, va, vb);
    c2 = vfma(c2, va, vb);
    c3 = vfma(c3, va, vb);
    c4 = vfma(c4, va, vb);
    c5 = vfma(c5, va, vb);
    c6 = vfma(c6, va, vb);
    c7 = vfma(c7, va, vb);
    c8 = vfma(c8, va, vb);
    c9 = vfma(c9, va, vb);
    c10 = vfma(c10, va, vb);
    c11 = vfma(c11, va, vb);
  }
  const Vec all[kFmaChains] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
  for (int k = 0; k < kFmaChains; ++k) vstore(out + k * kFmaLanes, all[k]);
}

void triad(float* a, const float* b, const float* c, float s, int64_t n, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

void first_touch(float* x, float value, int64_t n, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) x[i] = value;
}

}  // namespace tb::cpu
