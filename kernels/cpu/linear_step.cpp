// kernels/cpu/linear_step.cpp — see linear_step.h. B rows, D inputs, O <= 16 outputs.
// Per thread, over its share of the rows:
//   O == 1: per row, z = x . w + b (D/16 vector FMAs and one horizontal sum), the loss
//           term, then dw += g x from the same row still in registers/L1.
//   O > 1:  blocks of kRowBlock rows; the forward sweep over p keeps one vector of O
//           outputs per row (W^T packed once per step as D x 16, zero-padded), then
//           the backward sweep adds g_i x_i[p] into a private dW^T (D x 16) row p.
// Then every thread sums a slice of D across the threads' private gradients (in
// thread order) into dW (O x D). The element math is tb::mse_element's.
// The slow twin is forward GEMM + mse_loss_grad + GEMM + column_sum
// (tests/kernels/test_linear_step_cpu.cpp).
#include "kernels/cpu/linear_step.h"

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>
#if defined(__AVX512F__)
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wmaybe-uninitialized
// reports wherever they are inlined (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#endif

#include "kernels/scalar_math.h"

namespace tb::cpu {
namespace {

constexpr int64_t kLanes = kLinearStepMaxOutputs;  // outputs padded to 16 floats
constexpr int64_t kRowBlock = 8;                    // rows sharing one sweep over W^T (O > 1)
constexpr int64_t kPrefetchRows = 4;                // O == 1: software prefetch distance, rows
// Below this many elements of X one thread is faster than waking the team.
constexpr int64_t kParallelMinElems = int64_t{1} << 15;

// A 64-byte aligned buffer that only grows: steady-state steps never allocate.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  ~Buffer() { ::operator delete(p_, std::align_val_t{64}); }
  float* data() const { return p_; }
  float* get(int64_t n) {
    if (static_cast<size_t>(n) > n_) {
      ::operator delete(p_, std::align_val_t{64});
      p_ = nullptr;  // stays valid if the allocation throws
      n_ = 0;
      p_ = static_cast<float*>(::operator new(static_cast<size_t>(n) * sizeof(float), std::align_val_t{64}));
      n_ = static_cast<size_t>(n);
    }
    return p_;
  }

 private:
  float* p_ = nullptr;
  size_t n_ = 0;
};

// One thread's sums: gradient (O == 1: dw, D floats; O > 1: dW^T, D x 16), loss, db.
struct Partial {
  Buffer grad;
  double loss = 0;
  double db[kLanes] = {};
};

#if defined(__AVX512F__)

__mmask16 low_lanes(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1); }

// O == 1, rows [r0, r1): one read of each row serves both z = x.w + b and dw += g x.
void rows_one_output(const float* x, const float* t, int64_t r0, int64_t r1, int64_t d, const float* w,
                     float b0, float inv_count, Partial* part) {
  float* dw = part->grad.get(d);
  std::fill(dw, dw + d, 0.0f);
  const int64_t dv = d / 16 * 16;
  const __mmask16 tail = low_lanes(d - dv);
  double loss = 0, db = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * d;
    // The row kPrefetchRows ahead: the hardware prefetcher alone left one core at
    // ~10 GB/s on 64-float rows, this reaches ~11.5 (prefetches never fault, so
    // running past the last row is harmless).
    for (int64_t q = 0; q < d; q += 16) {
      _mm_prefetch(reinterpret_cast<const char*>(xr + kPrefetchRows * d + q), _MM_HINT_T0);
    }
    __m512 acc = _mm512_setzero_ps();
    for (int64_t p = 0; p < dv; p += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(xr + p), _mm512_loadu_ps(w + p), acc);
    if (tail) acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, xr + dv), _mm512_maskz_loadu_ps(tail, w + dv), acc);
    float g;
    loss += static_cast<double>(tb::mse_element(_mm512_reduce_add_ps(acc) + b0, t[r], inv_count, &g));
    db += static_cast<double>(g);
    const __m512 gv = _mm512_set1_ps(g);
    for (int64_t p = 0; p < dv; p += 16) {
      _mm512_storeu_ps(dw + p, _mm512_fmadd_ps(gv, _mm512_loadu_ps(xr + p), _mm512_loadu_ps(dw + p)));
    }
    if (tail) {
      _mm512_mask_storeu_ps(dw + dv, tail,
                            _mm512_fmadd_ps(gv, _mm512_maskz_loadu_ps(tail, xr + dv), _mm512_maskz_loadu_ps(tail, dw + dv)));
    }
  }
  part->loss = loss;
  part->db[0] = db;
}

// acc[0] += v[0..8), acc[1] += v[8..16), in double.
inline void add_as_double(__m512d* acc, __m512 v) {
  acc[0] = _mm512_add_pd(acc[0], _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
  acc[1] = _mm512_add_pd(acc[1], _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
}

// O > 1: kR rows x[0..kR) (row stride d) against W^T (d x 16), into dW^T (d x 16).
template <int kR>
void row_block(const float* x, const float* t, int64_t d, int64_t o, const float* wt, __m512 bias, __m512 two,
               __m512 inv, float* dwt, __m512d* loss, __m512d* db) {
  __m512 z[kR];
#pragma GCC unroll 16
  for (int i = 0; i < kR; ++i) z[i] = bias;
  for (int64_t p = 0; p < d; ++p) {
    const __m512 wp = _mm512_load_ps(wt + p * kLanes);
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i) z[i] = _mm512_fmadd_ps(_mm512_set1_ps(x[i * d + p]), wp, z[i]);
  }
  const __mmask16 m = low_lanes(o);
  __m512 g[kR];
#pragma GCC unroll 16
  for (int i = 0; i < kR; ++i) {
    // tb::mse_element per lane: diff = z - t; grad = 2 diff inv; loss term diff^2.
    // Lanes past O hold 0 - 0 (zero-padded W^T and bias, masked t).
    const __m512 diff = _mm512_sub_ps(z[i], _mm512_maskz_loadu_ps(m, t + i * o));
    const __m512 sq = _mm512_mul_ps(diff, diff);
    g[i] = _mm512_mul_ps(_mm512_mul_ps(two, diff), inv);
    add_as_double(loss, sq);
    add_as_double(db, g[i]);
  }
  for (int64_t p = 0; p < d; ++p) {
    __m512 acc = _mm512_load_ps(dwt + p * kLanes);
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i) acc = _mm512_fmadd_ps(_mm512_set1_ps(x[i * d + p]), g[i], acc);
    _mm512_store_ps(dwt + p * kLanes, acc);
  }
}

void rows_many_outputs(const float* x, const float* t, int64_t r0, int64_t r1, int64_t d, int64_t o,
                       const float* wt, const float* b, float inv_count, Partial* part) {
  float* dwt = part->grad.get(d * kLanes);
  std::fill(dwt, dwt + d * kLanes, 0.0f);
  const __m512 bias = _mm512_maskz_loadu_ps(low_lanes(o), b);
  const __m512 two = _mm512_set1_ps(2.0f), inv = _mm512_set1_ps(inv_count);
  __m512d loss[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};
  __m512d db[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};
  int64_t r = r0;
  for (; r + kRowBlock <= r1; r += kRowBlock) {
    row_block<kRowBlock>(x + r * d, t + r * o, d, o, wt, bias, two, inv, dwt, loss, db);
  }
  for (; r < r1; ++r) row_block<1>(x + r * d, t + r * o, d, o, wt, bias, two, inv, dwt, loss, db);
  part->loss = _mm512_reduce_add_pd(_mm512_add_pd(loss[0], loss[1]));
  alignas(64) double lanes[kLanes];
  _mm512_store_pd(lanes, db[0]);
  _mm512_store_pd(lanes + 8, db[1]);
  std::copy(lanes, lanes + kLanes, part->db);
}

#else  // portable: the same passes as plain loops

void rows_one_output(const float* x, const float* t, int64_t r0, int64_t r1, int64_t d, const float* w,
                     float b0, float inv_count, Partial* part) {
  float* dw = part->grad.get(d);
  std::fill(dw, dw + d, 0.0f);
  double loss = 0, db = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * d;
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t p = 0; p < d; ++p) s += xr[p] * w[p];
    float g;
    loss += static_cast<double>(tb::mse_element(s + b0, t[r], inv_count, &g));
    db += static_cast<double>(g);
#pragma omp simd
    for (int64_t p = 0; p < d; ++p) dw[p] += g * xr[p];
  }
  part->loss = loss;
  part->db[0] = db;
}

void rows_many_outputs(const float* x, const float* t, int64_t r0, int64_t r1, int64_t d, int64_t o,
                       const float* wt, const float* b, float inv_count, Partial* part) {
  float* dwt = part->grad.get(d * kLanes);
  std::fill(dwt, dwt + d * kLanes, 0.0f);
  double loss = 0, db[kLanes] = {};
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * d;
    float z[kLanes], g[kLanes] = {};
    for (int64_t j = 0; j < kLanes; ++j) z[j] = j < o ? b[j] : 0.0f;
    for (int64_t p = 0; p < d; ++p) {
#pragma omp simd
      for (int64_t j = 0; j < kLanes; ++j) z[j] += xr[p] * wt[p * kLanes + j];
    }
    for (int64_t j = 0; j < o; ++j) {
      loss += static_cast<double>(tb::mse_element(z[j], t[r * o + j], inv_count, &g[j]));
      db[j] += static_cast<double>(g[j]);
    }
    for (int64_t p = 0; p < d; ++p) {
#pragma omp simd
      for (int64_t j = 0; j < kLanes; ++j) dwt[p * kLanes + j] += xr[p] * g[j];
    }
  }
  part->loss = loss;
  std::copy(db, db + kLanes, part->db);
}

#endif

}  // namespace

double linear_mse_step(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                       const float* b, float inv_count, float* dw, float* db) {
  if (o < 1 || o > kLinearStepMaxOutputs || d < 1 || rows < 0) {
    throw std::invalid_argument("tb::cpu::linear_mse_step: needs 1 <= O <= 16, D >= 1, B >= 0 (got B=" +
                                std::to_string(rows) + " D=" + std::to_string(d) + " O=" + std::to_string(o) + ")");
  }
  thread_local Buffer wt_buf;
  thread_local std::vector<Partial> parts;
  const int want = rows * d >= kParallelMinElems ? std::max(1, omp_get_max_threads()) : 1;
  if (parts.size() < static_cast<size_t>(want)) parts.resize(static_cast<size_t>(want));
  for (int i = 0; i < want; ++i) parts[i].grad.get(o == 1 ? d : d * kLanes);  // sized here, not in the region
  float* wt = o > 1 ? wt_buf.get(d * kLanes) : nullptr;
  Partial* part = parts.data();
  int team = 1;

  // tid of n threads: pack a slice of W^T, sum its rows, then reduce a slice of D.
  auto body = [&](int tid, int n) {
    if (wt != nullptr) {
      for (int64_t p = d * tid / n; p < d * (tid + 1) / n; ++p) {
        for (int64_t j = 0; j < kLanes; ++j) wt[p * kLanes + j] = j < o ? w[j * d + p] : 0.0f;
      }
    }
    if (n > 1) {
#pragma omp barrier
    }
    const int64_t r0 = rows * tid / n, r1 = rows * (tid + 1) / n;
    if (o == 1) rows_one_output(x, t, r0, r1, d, w, b[0], inv_count, &part[tid]);
    else rows_many_outputs(x, t, r0, r1, d, o, wt, b, inv_count, &part[tid]);
    if (n > 1) {
#pragma omp barrier
    }
    const int64_t stride = o == 1 ? 1 : kLanes;
    for (int64_t p = d * tid / n; p < d * (tid + 1) / n; ++p) {
      for (int64_t j = 0; j < o; ++j) {
        float s = 0.0f;
        for (int k = 0; k < n; ++k) s += part[k].grad.data()[p * stride + j];
        dw[j * d + p] = s;
      }
    }
  };
  if (want == 1) {
    body(0, 1);
  } else {
#pragma omp parallel num_threads(want)
    {
#pragma omp single nowait
      team = omp_get_num_threads();
      body(omp_get_thread_num(), omp_get_num_threads());
    }
  }
  double loss = 0;
  for (int j = 0; j < o; ++j) {
    double s = 0;
    for (int k = 0; k < team; ++k) s += part[k].db[j];
    db[j] = static_cast<float>(s);
  }
  for (int k = 0; k < team; ++k) loss += part[k].loss;
  return loss;
}

}  // namespace tb::cpu
