// Ad-hoc: the blocked linear step alone, D 1024, B 4096, NB distinct batches; prints GFLOP/s per repetition.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
namespace tb::cpu {
double linear_mse_step_blocked(const float*, const float*, int64_t, int64_t, int64_t, const float*, const float*,
                               float, float*, float*);
}
int main(int argc, char** argv) {
  const int64_t o = atoi(argv[1]), D = 1024, B = 4096, nb = 8; const int reps = atoi(argv[2]);
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(nb * B * D), t(nb * B * o), w(o * D), b(o), dw(o * D), db(o);
  for (auto& v : x) v = u(rng); for (auto& v : t) v = u(rng); for (auto& v : w) v = u(rng) * 0.01f;
  std::vector<double> g;
  for (int r = 0; r < reps + 1; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t q = 0; q < nb; ++q) {
      tb::cpu::linear_mse_step_blocked(x.data() + q * B * D, t.data() + q * B * o, B, D, o, w.data(), b.data(),
                                       1.0f / (B * o), dw.data(), db.data());
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) g.push_back(4.0 * B * D * o * nb / s / 1e9);
  }
  for (double v : g) printf("%.1f ", v);
  printf("GFLOP/s\n");
}
