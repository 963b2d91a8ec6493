// Ad-hoc (docs only, ab.txt item 8): ab_main.cpp with the variant chosen by g_stride_mode (the dot form's W-copy and
// dW row stride: 0 = D + 16 as committed, 1 = D, 2 = D + 512, 3 = D + 256 floats) instead of g_pf_on. Build as
// ab_main.cpp. Run: OMP_NUM_THREADS=1 ./abs O PAIRS MODE 0
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
  const int64_t o = atoi(argv[1]), D = 1024, B = 4096, nb = 8; const int reps = argc > 2 ? atoi(argv[2]) : 11; const int mode = argc > 3 ? atoi(argv[3]) : 1; const int base = argc > 4 ? atoi(argv[4]) : 0; if (argc > 6) set_chunk(atol(argv[5]), atoi(argv[6]));
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(nb * B * D), t(nb * B * o), w(o * D), b(o), dw(o * D), db(o), dw2(o * D), db2(o);
  for (auto& v : x) v = u(rng); for (auto& v : t) v = u(rng); for (auto& v : w) v = u(rng) * 0.01f;
  std::vector<double> ta, tb_, ratio;
  for (int r = 0; r < reps; ++r) {
    double tt[2];
    for (int which = 0; which < 2; ++which) {
      const int pf = (which + r) % 2;
      g_pf_on = 0; tb::cpu::g_stride_mode = pf ? mode : base;
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
