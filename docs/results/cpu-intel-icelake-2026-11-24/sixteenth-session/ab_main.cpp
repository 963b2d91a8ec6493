// Ad-hoc (docs only, ab.txt items 3, 6, 7, 8): two variants of dot-form-variants.diff's linear step in one process,
// alternating per repetition. Build from the repository root at 03cded0 with the diff applied to a copy
// (ls_prof.cpp): g++ -O3 -DNDEBUG -march=native -fopenmp -std=c++20 -I. ab_main.cpp ls_prof.cpp
// kernels/cpu/{linear_step_blocked,gemm,cpu_props}.cpp -o ab.  Run: OMP_NUM_THREADS=1 ./ab O PAIRS VARIANT BASE [DC G]
// With AB_STRIDE=1 in the environment (item 8) VARIANT and BASE pick g_stride_mode instead of g_pf_on: the dot
// form's W-copy and dW row stride, 0 = D + 16 as committed, 1 = D, 2 = D + 512, 3 = D + 256 floats.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include <cmath>
#include "kernels/cpu/linear_step.h"
extern int g_pf_on;
namespace tb::cpu { extern int g_stride_mode; }
namespace tb::cpu { namespace { } }
extern "C" void set_chunk(long, int);
int main(int argc, char** argv) {
  const int64_t o = atoi(argv[1]), D = 1024, B = 4096, nb = 8; const int reps = argc > 2 ? atoi(argv[2]) : 11; const int mode = argc > 3 ? atoi(argv[3]) : 1; const int base = argc > 4 ? atoi(argv[4]) : 0; const bool stride = getenv("AB_STRIDE") != nullptr; if (argc > 6) set_chunk(atol(argv[5]), atoi(argv[6]));
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(nb * B * D), t(nb * B * o), w(o * D), b(o), dw(o * D), db(o), dw2(o * D), db2(o);
  for (auto& v : x) v = u(rng); for (auto& v : t) v = u(rng); for (auto& v : w) v = u(rng) * 0.01f;
  std::vector<double> ta, tb_, ratio;
  for (int r = 0; r < reps; ++r) {
    double tt[2];
    for (int which = 0; which < 2; ++which) {
      const int pf = (which + r) % 2;
      if (stride) {
        g_pf_on = 0;
        tb::cpu::g_stride_mode = pf ? mode : base;
      } else {
        g_pf_on = pf ? mode : base;
      }
      auto t0 = std::chrono::steady_clock::now();
      for (int64_t k = 0; k < nb; ++k)
        tb::cpu::linear_mse_step(x.data() + k * B * D, t.data() + k * B * o, B, D, o, w.data(), b.data(), 1.0f / (B * o), pf ? dw2.data() : dw.data(), pf ? db2.data() : db.data());
      tt[pf] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    ta.push_back(tt[0]); tb_.push_back(tt[1]); ratio.push_back(tt[0] / tt[1]);
  }
  { double md = 0, mx = 0; for (size_t i = 0; i < dw.size(); ++i) { md = std::max(md, (double)std::fabs(dw[i] - dw2[i])); mx = std::max(mx, (double)std::fabs(dw[i])); }
    for (size_t i = 0; i < db.size(); ++i) md = std::max(md, (double)std::fabs(db[i] - db2[i]));
    if (md > 1e-5 * mx + 1e-7) { printf("results differ! %g of %g\n", md, mx); return 1; } }
  std::sort(ta.begin(), ta.end()); std::sort(tb_.begin(), tb_.end()); std::sort(ratio.begin(), ratio.end());
  double fl = 4.0 * B * D * o * nb;
  printf("O=%3ld  off %.1f  on %.1f GFLOP/s (medians)  speedup per pair median %.3f [%.3f-%.3f]\n", o, fl / ta[reps / 2] / 1e9,
         fl / tb_[reps / 2] / 1e9, ratio[reps / 2], ratio[0], ratio[reps - 1]);
}
