// Ad-hoc: linear_mse_step_blocked (base) against a variant whose forward K slice is D+1 in S slices.
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include "kernels/cpu/linear_step.h"
namespace tb::cpu {
extern int64_t g_kslice_slices;
double linear_mse_step_blocked_var(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                                   const float* b, float inv_count, float* dw, float* db);
}
static unsigned long long fnv(const std::vector<float>& a, const std::vector<float>& b) {
  unsigned long long h = 1469598103934665603ull;
  for (const auto* v : {&a, &b}) for (float f : *v) { unsigned u; memcpy(&u, &f, 4); h = (h ^ u) * 1099511628211ull; }
  return h;
}
int main(int argc, char** argv) {
  const int64_t B = 4096, D = 1024, nb = getenv("NB") ? atoi(getenv("NB")) : 8;
  const int64_t o = atoi(argv[1]);
  tb::cpu::g_kslice_slices = atoi(argv[2]);
  const int reps = argc > 3 ? atoi(argv[3]) : 10;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(nb * B * D), t(nb * B * o), w(o * D), b(o), dw(o * D), db(o);
  for (auto& v : x) v = u(rng);
  for (auto& v : t) v = u(rng);
  for (auto& v : w) v = u(rng) * 0.01f;
  std::vector<double> ts[2];
  unsigned long long h[2] = {0, 0};
  for (int r = 0; r < 2 * reps; ++r) {
    const int m = r & 1;
    auto f = m ? tb::cpu::linear_mse_step_blocked_var : tb::cpu::linear_mse_step_blocked;
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t k = 0; k < nb; ++k)
      f(x.data() + k * B * D, t.data() + k * B * o, B, D, o, w.data(), b.data(), 1.0f / (B * o), dw.data(), db.data());
    ts[m].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    h[m] = fnv(dw, db);
  }
  for (int m = 0; m < 2; ++m) {
    std::sort(ts[m].begin(), ts[m].end());
    printf("%s O=%ld S=%ld threads=%d median %.1f best %.1f GFLOP/s hash %016llx\n", m ? "var " : "base", (long)o,
           (long)tb::cpu::g_kslice_slices, omp_get_max_threads(), 4.0 * B * D * o * nb / ts[m][ts[m].size() / 2] / 1e9,
           4.0 * B * D * o * nb / ts[m][0] / 1e9, h[m]);
  }
}
