// Ad-hoc (docs only), twentieth session. Build: g++ -O3 -march=native THIS -o bc; run: ./bc
// Zen 3: does vbroadcastss from memory cost an FMA-pipe slot? 6x16 micro-kernel shape, data in L1.
#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <algorithm>
alignas(64) float A[6 * 256 * 8], B[256 * 16];
template <int MODE>  // 0: broadcast loads of A (6 per k), 1: full-vector loads of a pre-broadcast A
__attribute__((noinline)) float run(int reps) {
  __m256 acc[6][2];
  for (int i = 0; i < 6; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int r = 0; r < reps; ++r) {
#pragma GCC unroll 4
    for (int p = 0; p < 256; ++p) {
      const __m256 b0 = _mm256_load_ps(B + p * 16), b1 = _mm256_load_ps(B + p * 16 + 8);
#pragma GCC unroll 6
      for (int i = 0; i < 6; ++i) {
        const __m256 a = MODE == 0 ? _mm256_broadcast_ss(A + p * 6 + i) : _mm256_load_ps(A + (p * 6 + i) * 8);
        acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
      }
    }
  }
  __m256 s = _mm256_setzero_ps();
  for (int i = 0; i < 6; ++i) s = _mm256_add_ps(s, _mm256_add_ps(acc[i][0], acc[i][1]));
  float o[8]; _mm256_storeu_ps(o, s); return o[0];
}
template <int MODE> double rate() {
  const int reps = 20000; double best = 1e9;
  for (int t = 0; t < 7; ++t) {
    auto t0 = std::chrono::steady_clock::now(); volatile float x = run<MODE>(reps); (void)x;
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * 6 * 16 * 256 * reps / best / 1e9;
}
int main() {
  for (int i = 0; i < 6 * 256 * 8; ++i) A[i] = 1e-3f; for (int i = 0; i < 256 * 16; ++i) B[i] = 1e-3f;
  for (int k = 0; k < 3; ++k) printf("broadcast %.1f  full-load %.1f GFLOP/s\n", rate<0>(), rate<1>());
}
