// Ad-hoc (docs only): the blocked linear step against a variant of it (linear_mse_step_blocked_pg: a copy of
// kernels/cpu/linear_step_blocked.cpp with packed-g-backward.diff applied and the function renamed), alternating
// per repetition in one process; checks that dW and db are bitwise equal. Build: g++ -O3 -DNDEBUG -march=native
// -fopenmp -std=c++20 -I. <this file> <the variant> kernels/cpu/{linear_step,linear_step_blocked,gemm,cpu_props}.cpp
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include "kernels/cpu/linear_step.h"
namespace tb::cpu {
double linear_mse_step_blocked_pg(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                                  const float* b, float inv_count, float* dw, float* db);
}
int main(int argc, char** argv) {
  const int64_t B = 4096, D = 1024, nb = 8;
  const int64_t o = atoi(argv[1]);
  const int reps = argc > 2 ? atoi(argv[2]) : 15;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(nb * B * D), t(nb * B * o), w(o * D), b(o), dw(o * D), db(o), dw2(o * D), db2(o);
  for (auto& v : x) v = u(rng);
  for (auto& v : t) v = u(rng);
  for (auto& v : w) v = u(rng) * 0.01f;
  std::vector<double> ta, tb_;
  for (int r = 0; r < reps; ++r) {
    for (int which = 0; which < 2; ++which) {
      const bool pg = (which + r) % 2 == 1;
      auto t0 = std::chrono::steady_clock::now();
      for (int64_t k = 0; k < nb; ++k)
        (pg ? tb::cpu::linear_mse_step_blocked_pg : tb::cpu::linear_mse_step_blocked)(
            x.data() + k * B * D, t.data() + k * B * o, B, D, o, w.data(), b.data(), 1.0f / (B * o),
            pg ? dw2.data() : dw.data(), pg ? db2.data() : db.data());
      (pg ? tb_ : ta).push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  if (dw != dw2 || db != db2) { printf("results differ!\n"); return 1; }
  std::vector<double> ratio;
  for (int r = 0; r < reps; ++r) ratio.push_back(ta[r] / tb_[r]);
  std::sort(ta.begin(), ta.end()); std::sort(tb_.begin(), tb_.end()); std::sort(ratio.begin(), ratio.end());
  const double f = 4.0 * B * D * o * nb / 1e9;
  printf("O=%ld T=%d base %.1f packed-g %.1f GFLOP/s (medians of %d); per-pair speedup median %.3f [%.3f-%.3f]\n", (long)o,
         omp_get_max_threads(), f / ta[reps / 2], f / tb_[reps / 2], reps, ratio[reps / 2], ratio[0], ratio[reps - 1]);
}
