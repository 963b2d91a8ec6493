// Ad-hoc (docs only): linear_mse_step_blocked, old (static split) against new (idle threads take
// unstarted work), alternating per repetition in one process. B 4096 x D 1024 x O; X streamed
// (NB batches). "old" is linear_step_blocked.cpp at a596f24 compiled with
// -Dlinear_mse_step_blocked=linear_mse_step_blocked_old (old.o), "new" the one at ffc1577:
//   g++ ... -Dlinear_mse_step_blocked=linear_mse_step_blocked_old -c old.cpp -o old.o
//   g++ -O3 -DNDEBUG -march=native -fopenmp -std=c++20 -I. linear_blocked_ab.cpp old.o
//     kernels/cpu/linear_step_blocked.cpp kernels/cpu/linear_step.cpp kernels/cpu/gemm.cpp kernels/cpu/cpu_props.cpp
// Usage: OMP_NUM_THREADS=T ./lbt O [reps]. Prints the median and best GFLOP/s (4 B D O per step) of
// each side and an FNV-1a hash of dW and db (equal hashes: bitwise the same results).
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
double linear_mse_step_blocked_old(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                                   const float* b, float inv_count, float* dw, float* db);
}
static unsigned long long fnv(const std::vector<float>& a, const std::vector<float>& b) {
  unsigned long long h = 1469598103934665603ull;
  for (const auto* v : {&a, &b}) for (float f : *v) { unsigned u; memcpy(&u, &f, 4); h = (h ^ u) * 1099511628211ull; }
  return h;
}
int main(int argc, char** argv) {
  const int64_t B = 4096, D = 1024, nb = getenv("NB") ? atoi(getenv("NB")) : 16;
  const int64_t o = atoi(argv[1]);
  const int reps = argc > 2 ? atoi(argv[2]) : 10;
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
    auto f = m ? tb::cpu::linear_mse_step_blocked : tb::cpu::linear_mse_step_blocked_old;
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t k = 0; k < nb; ++k)
      f(x.data() + k * B * D, t.data() + k * B * o, B, D, o, w.data(), b.data(), 1.0f / (B * o), dw.data(), db.data());
    ts[m].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    h[m] = fnv(dw, db);
  }
  for (int m = 0; m < 2; ++m) {
    std::sort(ts[m].begin(), ts[m].end());
    printf("%s O=%ld threads=%d median %.1f best %.1f GFLOP/s hash %016llx\n", m ? "new" : "old", (long)o,
           omp_get_max_threads(), 4.0 * B * D * o * nb / ts[m][ts[m].size() / 2] / 1e9, 4.0 * B * D * o * nb / ts[m][0] / 1e9, h[m]);
  }
}
