// Ad-hoc (docs only): the AVX2 loops of the linear step's one-pass forms alone, data in L1 (D = 256 floats a
// row for the broadcast probes, 1024 for the dot-form ones), one thread, best of 7 trials of 2000 calls.
// Build: g++ -O3 -march=native -std=c++20 l1_probes.cpp -o l1_probes. Output: GFLOP/s per probe (ab.txt).
// Arrays are written before use: left as untouched .bss every row maps to the one zero page, and on Zen 3
// loads from different virtual addresses of one physical line ran at a third of the rate.
#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

constexpr int kLd = 1040;  // padded row stride (floats); the 4 KiB stride probes use 1024
alignas(64) float x[16 * kLd];
alignas(64) float w[16 * kLd];  // W^T (p x 8 or p x 16) for the vector probes, W's rows for the dot ones
alignas(64) float dw[16 * kLd];
float sink;

template <class F>
double rate(F f, double flop) {
  double best = 1e9;
  for (int t = 0; t < 7; ++t) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < 2000; ++k) f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  return flop * 2000 / best / 1e9;
}

template <int N>
void keep(const __m256 (&z)[N]) {
  __m256 s = z[0];
  for (int i = 1; i < N; ++i) s = _mm256_add_ps(s, z[i]);
  sink += s[0];
}

// Vector form, forward: R rows x 1 vector of 8 outputs; per p one load of W^T, R broadcasts of x.
template <int R, int LD>
__attribute__((noinline)) void vec_forward(int64_t d) {
  __m256 z[R];
  for (int i = 0; i < R; ++i) z[i] = _mm256_setzero_ps();
  for (int64_t p = 0; p < d; ++p) {
    const __m256 wp = _mm256_load_ps(w + p * 8);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) z[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(x + i * LD + p), wp, z[i]);
  }
  keep(z);
}

// Vector form, backward: dW^T row p (8 floats) += sum over R rows, one chain per p.
template <int R, int LD>
__attribute__((noinline)) void vec_backward(int64_t d) {
  __m256 g[R];
  for (int i = 0; i < R; ++i) g[i] = _mm256_set1_ps(1e-3f);
  for (int64_t p = 0; p < d; ++p) {
    __m256 a = _mm256_load_ps(dw + p * 8);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) a = _mm256_fmadd_ps(_mm256_broadcast_ss(x + i * LD + p), g[i], a);
    _mm256_store_ps(dw + p * 8, a);
  }
}

// The same broadcasts from one row (8 neighbouring floats), and the GEMM-like 6 rows x 2 vectors.
__attribute__((noinline)) void one_row_broadcasts(int64_t d) {
  __m256 z[8];
  for (int i = 0; i < 8; ++i) z[i] = _mm256_setzero_ps();
  for (int64_t p = 0; p < d; ++p) {
    const __m256 wp = _mm256_load_ps(w + p * 8);
#pragma GCC unroll 16
    for (int i = 0; i < 8; ++i) z[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(x + p + i), wp, z[i]);
  }
  keep(z);
}

__attribute__((noinline)) void six_by_two(int64_t d) {
  __m256 z[12];
  for (int i = 0; i < 12; ++i) z[i] = _mm256_setzero_ps();
  for (int64_t p = 0; p < d; ++p) {
    const __m256 w0 = _mm256_load_ps(w + p * 16), w1 = _mm256_load_ps(w + p * 16 + 8);
#pragma GCC unroll 16
    for (int i = 0; i < 6; ++i) {
      const __m256 xi = _mm256_broadcast_ss(x + i * kLd + p);
      z[2 * i] = _mm256_fmadd_ps(xi, w0, z[2 * i]);
      z[2 * i + 1] = _mm256_fmadd_ps(xi, w1, z[2 * i + 1]);
    }
  }
  keep(z);
}

// Dot form: z_ij = x_i . w_j (R x J accumulators) and dw_j += sum_i g_ij x_i, as linear_step.cpp.
template <int R, int J>
__attribute__((noinline)) void dot_forward(int64_t d) {
  __m256 a[R * J];
  for (int k = 0; k < R * J; ++k) a[k] = _mm256_setzero_ps();
  for (int64_t p = 0; p < d; p += 8) {
    __m256 wv[J];
    for (int j = 0; j < J; ++j) wv[j] = _mm256_load_ps(w + j * kLd + p);
    for (int i = 0; i < R; ++i) {
      const __m256 xv = _mm256_load_ps(x + i * kLd + p);
      for (int j = 0; j < J; ++j) a[i * J + j] = _mm256_fmadd_ps(xv, wv[j], a[i * J + j]);
    }
  }
  keep(a);
}

template <int R, int J>
__attribute__((noinline)) void dot_backward(int64_t d) {
  __m256 gv[R][J];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < J; ++j) gv[i][j] = _mm256_set1_ps(1e-3f);
  for (int64_t p = 0; p < d; p += 8) {
    __m256 xv[R];
    for (int i = 0; i < R; ++i) xv[i] = _mm256_load_ps(x + i * kLd + p);
    for (int j = 0; j < J; ++j) {
      __m256 acc = _mm256_load_ps(dw + j * kLd + p);
      for (int i = 0; i < R; ++i) acc = _mm256_fmadd_ps(xv[i], gv[i][j], acc);
      _mm256_store_ps(dw + j * kLd + p, acc);
    }
  }
}

int main() {
  for (auto& v : x) v = 1e-3f;
  for (auto& v : w) v = 1e-3f;
  for (auto& v : dw) v = 0.0f;
  const int64_t dv = 256, dd = 1024;
  printf("vector forward  8 rows, stride 1024: %.1f\n", rate([&] { vec_forward<8, 1024>(dv); }, 2.0 * 8 * 8 * dv));
  printf("vector forward  8 rows, stride 1040: %.1f\n", rate([&] { vec_forward<8, kLd>(dv); }, 2.0 * 8 * 8 * dv));
  printf("vector forward 12 rows, stride 1024: %.1f\n", rate([&] { vec_forward<12, 1024>(dv); }, 2.0 * 8 * 12 * dv));
  printf("vector forward 12 rows, stride 1040: %.1f\n", rate([&] { vec_forward<12, kLd>(dv); }, 2.0 * 8 * 12 * dv));
  printf("vector backward 8 rows, stride 1024: %.1f\n", rate([&] { vec_backward<8, 1024>(dv); }, 2.0 * 8 * 8 * dv));
  printf("vector backward 8 rows, stride 1040: %.1f\n", rate([&] { vec_backward<8, kLd>(dv); }, 2.0 * 8 * 8 * dv));
  printf("vector backward 12 rows, stride 1040: %.1f\n", rate([&] { vec_backward<12, kLd>(dv); }, 2.0 * 8 * 12 * dv));
  printf("8 broadcasts from one row: %.1f\n", rate([&] { one_row_broadcasts(dv); }, 2.0 * 8 * 8 * dv));
  printf("6 rows x 2 vectors: %.1f\n", rate([&] { six_by_two(dv); }, 2.0 * 8 * 12 * dv));
#define DOT(R, J)                                                                                 \
  printf("dot forward %dx%d: %.1f\n", R, J, rate([&] { dot_forward<R, J>(dd); }, 2.0 * R * J * dd)); \
  printf("dot backward %dx%d: %.1f\n", R, J, rate([&] { dot_backward<R, J>(dd); }, 2.0 * R * J * dd));
  DOT(4, 3) DOT(3, 4) DOT(6, 2) DOT(2, 6) DOT(4, 2) DOT(8, 1)
  printf("(%g)\n", sink);
}
