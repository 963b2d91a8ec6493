// Ad-hoc (docs only): our GEMM at the linear step's two shapes (z = X W^T, NT B x O x D; dW = g^T X,
// TN O x D x B) against the blocked step (linear_mse_step_blocked), B 4096, D 1024, alternating,
// median of REPS. Build as docs/results/cpu-amd-zen5-2026-11-24/sweep-at-55ab985/linear_step_rate.cpp;
// run: OMP_NUM_THREADS=T ./gvs O [REPS].
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear_step.h"
using clk = std::chrono::steady_clock;
int main(int argc, char** argv) {
  const int64_t B = 4096, D = 1024, O = atoi(argv[1]);
  const int reps = argc > 2 ? atoi(argv[2]) : 7;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(B * D), t(B * O), w(O * D), b(O), dw(O * D), db(O), z(B * O);
  for (auto& v : x) v = u(rng);
  for (auto& v : t) v = u(rng);
  for (auto& v : w) v = u(rng) * 0.01f;
  std::vector<double> tg, ts, tf, tbk;
  for (int r = 0; r < reps; ++r) {
    auto t0 = clk::now();
    tb::cpu::gemm(false, true, B, O, D, 1.0f, x.data(), D, w.data(), D, 0.0f, z.data(), O);
    auto t1 = clk::now();
    tb::cpu::gemm(true, false, O, D, B, 1.0f, z.data(), O, x.data(), D, 0.0f, dw.data(), D);
    auto t2 = clk::now();
    tb::cpu::linear_mse_step_blocked(x.data(), t.data(), B, D, O, w.data(), b.data(), 1.0f / (B * O), dw.data(), db.data());
    auto t3 = clk::now();
    tf.push_back(std::chrono::duration<double>(t1 - t0).count());
    tbk.push_back(std::chrono::duration<double>(t2 - t1).count());
    tg.push_back(std::chrono::duration<double>(t2 - t0).count());
    ts.push_back(std::chrono::duration<double>(t3 - t2).count());
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  const double f2 = 2.0 * B * D * O / 1e9;
  printf("O=%ld T=%d gemm NT %.1f TN %.1f both %.1f | blocked step %.1f GFLOP/s\n", (long)O, omp_get_max_threads(),
         f2 / med(tf), f2 / med(tbk), 2 * f2 / med(tg), 2 * f2 / med(ts));
}
