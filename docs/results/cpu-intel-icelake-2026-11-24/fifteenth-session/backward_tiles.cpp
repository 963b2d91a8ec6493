// Ad-hoc (docs only): the blocked linear step's backward tiles alone ([dW db] += g^T Xb, K = 96 rows,
// D + 1 = 1025, the 8 x 48 AVX-512 tile), in the step's order, against three layouts, interleaved.
// Build: g++ -O3 -DNDEBUG -march=native -std=c++20 -I. <this file> -o /tmp/bwd; run: /tmp/bwd O
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/gemm_kernels.h"
using namespace tb::cpu::gemm_detail;
using K = Avx512Wide;
int main(int argc, char** argv) {
  const int64_t rows = 96, o = argc > 1 ? atoi(argv[1]) : 256, d1 = 1025, op = (o + 47) / 48 * 48;
  const int64_t ldx = 1056 + 16, nj = (d1 + 47) / 48, ldw = nj * 48, ngo = (o + 7) / 8;
  float* xb = static_cast<float*>(aligned_alloc(64, rows * ldx * 4));
  float* xbp = static_cast<float*>(aligned_alloc(64, nj * rows * 48 * 4));
  float* g = static_cast<float*>(aligned_alloc(64, rows * op * 4));
  float* dw = static_cast<float*>(aligned_alloc(64, ngo * 8 * ldw * 4));
  for (int64_t i = 0; i < rows * ldx; ++i) xb[i] = (i % 7) * 0.01f;
  for (int64_t j = 0; j < nj; ++j) for (int64_t p = 0; p < rows; ++p) for (int64_t c = 0; c < 48; ++c) xbp[(j * rows + p) * 48 + c] = xb[p * ldx + j * 48 + c];
  for (int64_t i = 0; i < rows * op; ++i) g[i] = (i % 5) * 0.01f;
  std::fill(dw, dw + ngo * 8 * ldw, 0.0f);
  float* gk = static_cast<float*>(aligned_alloc(64, ngo * rows * 8 * 4));
  for (int64_t q = 0; q < ngo; ++q) for (int64_t p = 0; p < rows; ++p) for (int64_t i = 0; i < 8; ++i) gk[(q * rows + p) * 8 + i] = g[p * op + q * 8 + i];
  const int reps = 60;
  std::vector<double> t[4];
  for (int r = 0; r < 15; ++r) {
    for (int mode : {0, 3, 2, 1}) {
      auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < reps; ++it)
        for (int64_t j = 0; j < nj; ++j)
          for (int64_t q = 0; q < ngo; ++q) {
            const float* b = mode == 1 ? xbp + j * rows * 48 : xb + j * 48;
            const int64_t ldb = mode == 1 ? 48 : ldx;
            run_tile<K, true>(rows, nullptr, mode == 3 ? gk + q * rows * 8 : g + q * 8, mode == 3 ? 8 : op, b, 1.0f, 1.0f, mode == 2 ? dw : dw + q * 8 * ldw + j * 48, ldw, std::min<int64_t>(8, o - q * 8), std::min<int64_t>(48, d1 - j * 48), ldb);
          }
      t[mode].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  const char* names[] = {"as the step", "packed B", "C in L1", "packed g"};
  printf("O=%ld", (long)o);
  for (int m : {0, 3, 2, 1}) {
    std::sort(t[m].begin(), t[m].end());
    printf("  %s %.1f [%.1f-%.1f]", names[m], 2.0 * rows * o * d1 * reps / t[m][7] / 1e9, 2.0 * rows * o * d1 * reps / t[m][14] / 1e9, 2.0 * rows * o * d1 * reps / t[m][0] / 1e9);
  }
  printf("  GFLOP/s, median [min-max] of 15\n");
}
