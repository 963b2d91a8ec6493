// Ad-hoc (docs only): the small MLP's training step (784-256-256-10, batch 256, shuffled rows, as
// harness/backends/cpu_model.cpp does it) with a timer per call, microseconds per step. Even steps
// run with tb_xmode 0, odd with 1, so both sides see the same minutes of this noisy VM; link with a
// gemm.cpp patched as gemm_toggle.diff (0: the split before f372409, 1: f372409). Build from the
// repository root: g++ -O3 -DNDEBUG -march=native -fopenmp -std=c++20 -I. mlp_step_toggle.cpp
//   kernels/cpu/gemm.cpp kernels/cpu/elementwise.cpp kernels/cpu/cpu_props.cpp
// Run: OMP_NUM_THREADS=2 ./a.out 940   (steps; 20 untimed first)
#include <omp.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>
#include <algorithm>
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
using namespace tb::cpu;
static std::map<std::string, double> T[2];
extern int tb_xmode;
template <class F> void tm(const std::string& n, F f) {
  auto t0 = std::chrono::steady_clock::now(); f();
  T[tb_xmode][n] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
int main(int argc, char** argv) {
  const int64_t N = 60000, B = 256; std::vector<int64_t> w = {784, 256, 256, 10};
  int steps = argc > 1 ? atoi(argv[1]) : 470;
  std::mt19937 rng(1); std::normal_distribution<float> nd(0, 1);
  std::vector<float> X(N * 784); for (auto& v : X) v = nd(rng);
  std::vector<int> lab(N); for (auto& l : lab) l = rng() % 10;
  std::vector<std::vector<float>> W(3), b(3), gW(3), gb(3), act(4);
  for (int l = 0; l < 3; ++l) { W[l].resize(w[l+1]*w[l]); for (auto& v: W[l]) v = nd(rng) * 0.05f; b[l].assign(w[l+1], 0); gW[l].resize(W[l].size()); gb[l].resize(w[l+1]); act[l+1].resize(B*w[l+1]); }
  std::vector<float> x(B*784), d(B*256), dp(B*256), vel(1); std::vector<int> lb(B);
  std::vector<int64_t> perm(N); for (int64_t i = 0; i < N; ++i) perm[i] = i; std::shuffle(perm.begin(), perm.end(), rng);
  double t_all[2] = {0, 0};
  for (int s = 0; s < steps + 20; ++s) {
    if (s == 20) { T[0].clear(); T[1].clear(); }
    tb_xmode = s & 1;
    auto t0 = std::chrono::steady_clock::now();
    const int64_t* rows = &perm[(s * B) % (N - B)];
    tm("gather", [&] {
#pragma omp parallel for
      for (int64_t i = 0; i < B; ++i) { std::memcpy(&x[i*784], &X[rows[i]*784], 784*4); lb[i] = lab[rows[i]]; } });
    for (int l = 0; l < 3; ++l) {
      const float* a = l == 0 ? x.data() : act[l].data();
      tm("fwd" + std::to_string(l), [&] { gemm(false, true, B, w[l+1], w[l], 1, a, w[l], W[l].data(), w[l], 0, act[l+1].data(), w[l+1]); });
      tm("biasact", [&] { bias_act_forward(act[l+1].data(), b[l].data(), B, w[l+1], l < 2); });
    }
    int64_t hits = 0;
    tm("loss", [&] { softmax_xent_loss_grad(act[3].data(), lb.data(), B, 10, 1.0f / B, d.data(), &hits); });
    for (int l = 2; l >= 0; --l) {
      const float* a = l == 0 ? x.data() : act[l].data();
      tm("dW" + std::to_string(l), [&] { gemm(true, false, w[l+1], w[l], B, 1, d.data(), w[l+1], a, w[l], 0, gW[l].data(), w[l]); });
      tm("colsum", [&] { column_sum(d.data(), B, w[l+1], gb[l].data()); });
      if (l == 0) break;
      tm("dA" + std::to_string(l), [&] { gemm(false, false, B, w[l], w[l+1], 1, d.data(), w[l+1], W[l].data(), w[l], 0, dp.data(), w[l]); });
      tm("relubw", [&] { relu_backward(dp.data(), a, B, w[l]); });
      d.swap(dp);
    }
    tm("sgd", [&] { for (int l = 0; l < 3; ++l) { sgd_update(W[l].data(), gW[l].data(), nullptr, W[l].size(), 0.05f, 0, 0); sgd_update(b[l].data(), gb[l].data(), nullptr, b[l].size(), 0.05f, 0, 0);} });
    if (s >= 20) t_all[tb_xmode] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  for (int m = 0; m < 2; ++m) {
  printf("mode %d threads %d step %.1f us:", m, omp_get_max_threads(), t_all[m] / (steps / 2) * 1e6);
  for (auto& [k, v] : T[m]) printf(" %s %.1f", k.c_str(), v / (steps / 2) * 1e6);
  printf("\n"); }
}
