// Ad-hoc (docs only, ab.txt item 1): rdtsc per 6-row block of the dot form's forward and backward (ls_prof.cpp,
// see ab_main.cpp). Run: OMP_NUM_THREADS=1 ./prof O D B BATCHES REPEATS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include <x86intrin.h>
#include "kernels/cpu/linear_step.h"
extern unsigned long long g_prof[4];
int main(int argc, char** argv) {
  const int64_t o = atoi(argv[1]), D = atoi(argv[2]), B = atoi(argv[3]), nb = atoi(argv[4]), reps = atoi(argv[5]);
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(nb * B * D), t(nb * B * o), w(o * D), b(o), dw(o * D), db(o);
  for (auto& v : x) v = u(rng); for (auto& v : t) v = u(rng); for (auto& v : w) v = u(rng) * 0.01f;
  for (int r = 0; r < 6; ++r) {
    g_prof[0] = g_prof[1] = 0;
    unsigned long long c0 = __rdtsc();
    for (int64_t q = 0; q < reps; ++q) for (int64_t k = 0; k < nb; ++k)
      tb::cpu::linear_mse_step(x.data() + k * B * D, t.data() + k * B * o, B, D, o, w.data(), b.data(), 1.0f / (B * o), dw.data(), db.data());
    unsigned long long tot = __rdtsc() - c0;
    double fma_per_block_ideal = 2.0 * 6 * D * o / 16 / 2;  // zmm FMAs / 2 per cycle, per 6-row block
    double blocks = reps * nb * (B / 6.0);
    printf("total %.2f Mcyc  fwd+loss %.1f%%  bwd %.1f%%  | cyc/block fwd %.0f bwd %.0f ideal-each %.0f\n", tot / 1e6,
           100.0 * g_prof[0] / tot, 100.0 * g_prof[1] / tot, g_prof[0] / blocks, g_prof[1] / blocks, fma_per_block_ideal / 2);
  }
}
