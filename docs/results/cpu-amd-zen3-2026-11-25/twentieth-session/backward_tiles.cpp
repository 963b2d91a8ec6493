// Ad-hoc (docs only), twentieth session. Build: g++ -O3 -march=native -std=c++20 -I. THIS -o kb; run: ./kb O [same]
// microbench: the blocked step's backward tiles on AVX2, data as in the step (O outputs, 96 rows, D 1024)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/gemm_kernels.h"
using namespace tb::cpu::gemm_detail;
int main(int argc, char** argv) {
  const int64_t o = atoi(argv[1]), nb = 96, d1 = 1025, ldx = 1056, nj = 65, ldw = nj * 16, op = round_up(o, 16);
  const int64_t MR = 6, ng_o = ceil_div(o, MR);
  const int same = argc > 2 ? atoi(argv[2]) : 0;  // 1: every tile on panel 0 (Xb panel in L1)
  tb::cpu::Buffer xb_, g_, dw_;
  float* xb = xb_.get(nb * ldx); float* g = g_.get(nb * op); float* dw = dw_.get(round_up(o, MR) * ldw);
  for (int64_t i = 0; i < nb * ldx; ++i) xb[i] = (i % 7) * 0.01f;
  for (int64_t i = 0; i < nb * op; ++i) g[i] = (i % 5) * 0.01f;
  for (int64_t i = 0; i < round_up(o, MR) * ldw; ++i) dw[i] = 0;
  double best = 1e9;
  for (int rep = 0; rep < 200; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t u = 0; u < nj * ng_o; ++u) {
      const int64_t j = same ? 0 : u / ng_o, o0 = u % ng_o * MR;
      run_tile<Avx2, true>(nb, nullptr, g + o0, op, xb + j * 16, 1.0f, 1.0f, dw + o0 * ldw + j * 16, ldw,
                           std::min(MR, o - o0), std::min<int64_t>(16, d1 - j * 16), ldx);
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  printf("O=%ld same=%d: %.1f GFLOP/s useful (2 nb O d1 / best)\n", (long)o, same, 2.0 * nb * o * d1 / best / 1e9);
}
