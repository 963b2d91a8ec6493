// Ad-hoc (docs only, ab.txt item 2): the dot form's 6 x 4 forward and backward kernels alone on L1-resident
// operands against a 24-chain FMA loop. Build: g++ -O3 -march=native -std=c++20 kern.cpp -o kern
// Run: ./kern D X_ROW_STRIDE DW_ROW_STRIDE WOFF_LINES   (e.g. ./kern 1024 1024 1040 8)
#include <immintrin.h>
#include <x86intrin.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
template <int kR, int J>
__attribute__((noinline)) void bwd(const float* x, const float* g, int64_t ldg, int64_t d, float* dw, int64_t ldw) {
  __m512 gv[kR][J];
#pragma GCC unroll 16
  for (int i = 0; i < kR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) gv[i][j] = _mm512_set1_ps(g[i * ldg + j]);
  for (int64_t p = 0; p < d; p += 16) {
    __m512 acc[J];
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) acc[j] = _mm512_loadu_ps(dw + j * ldw + p);
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i) {
      const __m512 xi = _mm512_loadu_ps(x + i * d + p);
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j) acc[j] = _mm512_fmadd_ps(gv[i][j], xi, acc[j]);
    }
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) _mm512_storeu_ps(dw + j * ldw + p, acc[j]);
  }
}
template <int kR, int J>
__attribute__((noinline)) void fwd(const float* x, const float* w, int64_t ldw, int64_t d, float* z, int64_t ldz) {
  __m512 acc[kR][J];
#pragma GCC unroll 16
  for (int i = 0; i < kR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t p = 0; p < d; p += 16) {
    __m512 wj[J];
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) wj[j] = _mm512_loadu_ps(w + j * ldw + p);
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i) {
      const __m512 xi = _mm512_loadu_ps(x + i * d + p);
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j) acc[i][j] = _mm512_fmadd_ps(xi, wj[j], acc[i][j]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < kR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) z[i * ldz + j] = _mm512_reduce_add_ps(acc[i][j]);
}
// FMA peak loop for calibration: 24 independent chains
__attribute__((noinline)) double peak(int64_t n) {
  __m512 a[24]; for (int i = 0; i < 24; ++i) a[i] = _mm512_set1_ps(i);
  const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
  for (int64_t k = 0; k < n; ++k) {
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) a[i] = _mm512_fmadd_ps(a[i], m, c);
  }
  __m512 s = a[0]; for (int i = 1; i < 24; ++i) s = _mm512_add_ps(s, a[i]);
  return _mm512_reduce_add_ps(s);
}
int main(int argc, char** argv) {
  const int64_t d = atoi(argv[1]), xs = atoi(argv[2]), ws = atoi(argv[3]), woff = argc > 4 ? atoi(argv[4]) : 0;
  float* x = (float*)aligned_alloc(4096, 4 * 6 * xs + 4096);
  float* w = (float*)aligned_alloc(4096, 4 * 4 * ws + 8192) + woff * 16; float* x0 = x; (void)x0;
  float g[6 * 4], z[6 * 4];
  for (int64_t i = 0; i < 6 * xs; ++i) x[i] = 0.001f * (i % 7);
  for (int64_t i = 0; i < 4 * ws; ++i) w[i] = 0.001f * (i % 5);
  for (int i = 0; i < 24; ++i) g[i] = 1e-6f;
  const int64_t n = 200000 * 256 / d;
  for (int rep = 0; rep < 1; ++rep) {
    uint64_t c0 = __rdtsc(); double s = peak(n * d / 16); uint64_t c1 = __rdtsc();
    for (int64_t k = 0; k < n; ++k) fwd<6, 4>(x, w, ws, d, z, 4);
    uint64_t c2 = __rdtsc();
    for (int64_t k = 0; k < n; ++k) bwd<6, 4>(x, g, 4, d, w, ws);
    uint64_t c3 = __rdtsc();
    double pk = double(c1 - c0), steps = double(n) * d / 16;
    printf("d=%ld: peak %.2f TSC/step(24 FMA)  fwd %.2f (%.0f%%)  bwd %.2f (%.0f%%)  %g\n", d, pk / steps,
           (c2 - c1) / steps, 100 * pk / (c2 - c1), (c3 - c2) / steps, 100 * pk / (c3 - c2), s + z[0]);
  }
}
