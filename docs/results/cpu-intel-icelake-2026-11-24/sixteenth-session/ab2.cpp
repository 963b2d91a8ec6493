// Ad-hoc (docs only, ab.txt item 4): df13758's linear_mse_step against 03cded0's (its kernels/cpu objects compiled
// with -Dtb=tbold), x at each line offset of a page. Build: the old objects with -Dtb=tbold -c, then
// g++ -O3 -DNDEBUG -march=native -fopenmp -std=c++20 -I. ab2.cpp kernels/cpu/{linear_step,linear_step_blocked,gemm,
// cpu_props}.cpp old_*.o -o ab2.  Run: PER=1 OMP_NUM_THREADS=1 ./ab2 O BEST_OF OFFSET_STRIDE_LINES
// Old (-Dtb=tbold objects) against new linear_mse_step, alternating, over x's page offsets.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include "kernels/cpu/linear_step.h"
namespace tbold::cpu {
double linear_mse_step(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                       const float* b, float inv_count, float* dw, float* db);
}
int main(int argc, char** argv) {
  const int64_t o = atoi(argv[1]), D = 1024, B = 4096, nb = 4;
  const int reps = argc > 2 ? atoi(argv[2]) : 3, stride = argc > 3 ? atoi(argv[3]) : 4;  // offsets k*64*stride
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(-1, 1);
  float* xbuf = static_cast<float*>(aligned_alloc(4096, (nb * B * D + 1024) * 4));
  std::vector<float> x0(nb * B * D), t(nb * B * o), w(o * D), b(o), dw(o * D), db(o), dw2(o * D), db2(o);
  for (auto& v : x0) v = u(rng); for (auto& v : t) v = u(rng); for (auto& v : w) v = u(rng) * 0.01f;
  const double fl = 4.0 * B * D * o * nb;
  std::vector<double> all_old, all_new, ratios;
  for (int off = 0; off < 64; off += stride) {
    float* x = xbuf + off * 16;
    std::memcpy(x, x0.data(), x0.size() * 4);
    double best[2] = {1e9, 1e9};
    for (int r = 0; r < reps; ++r) {
      for (int which = 0; which < 2; ++which) {
        const int nw = (which + r) % 2;
        auto t0 = std::chrono::steady_clock::now();
        for (int64_t k = 0; k < nb; ++k) {
          if (nw) tb::cpu::linear_mse_step(x + k * B * D, t.data() + k * B * o, B, D, o, w.data(), b.data(), 1.0f / (B * o), dw2.data(), db2.data());
          else tbold::cpu::linear_mse_step(x + k * B * D, t.data() + k * B * o, B, D, o, w.data(), b.data(), 1.0f / (B * o), dw.data(), db.data());
        }
        best[nw] = std::min(best[nw], std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
    }
    if (dw != dw2 || db != db2) { printf("results differ at offset %d\n", off); return 1; }
    if (getenv("PER")) printf("  off %4d B: old %.1f new %.1f\n", off * 64, fl / best[0] / 1e9, fl / best[1] / 1e9);
    all_old.push_back(fl / best[0] / 1e9); all_new.push_back(fl / best[1] / 1e9); ratios.push_back(best[0] / best[1]);
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  auto mn = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  auto mx = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
  printf("O=%3ld over %zu x offsets: old %.1f [%.1f-%.1f]  new %.1f [%.1f-%.1f] GFLOP/s (best of %d); new/old per offset median %.3f [%.3f-%.3f]\n",
         o, ratios.size(), med(all_old), mn(all_old), mx(all_old), med(all_new), mn(all_new), mx(all_new), reps, med(ratios), mn(ratios), mx(ratios));
}
