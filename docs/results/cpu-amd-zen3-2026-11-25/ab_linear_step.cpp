// A/B of linear step variants, alternating per repetition in one process.
// Env (nineteenth session): AB_B rows a step (4096), AB_NB steps of distinct X a repetition (8; X is
// AB_NB x AB_B x 1024 floats: 128 MiB streams from memory, AB_B 96 with AB_NB 1 stays in L2), AB_REP
// passes over them (1), AB_SPLIT S: arm B runs its step twice, on outputs [0, S) and [S, O) (t copied per half).
// Twentieth session: AB_BLOCKED makes old/new/v1..v4 the blocked step's builds (twentieth-session/build_ab_blocked.sh),
// AB_NOCHECK skips the results check (for a variant that computes something else on purpose).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include <cstdint>
using Step = double (*)(const float*, const float*, int64_t, int64_t, int64_t, const float*, const float*, float, float*, float*);
#define DECL(ns) namespace ns::cpu { double linear_mse_step(const float*, const float*, int64_t, int64_t, int64_t, const float*, const float*, float, float*, float*); \
  double linear_mse_step_blocked(const float*, const float*, int64_t, int64_t, int64_t, const float*, const float*, float, float*, float*); }
DECL(tbold) DECL(tb) DECL(tbv1) DECL(tbv2) DECL(tbv3) DECL(tbv4)
// Each arm by name: its linear step and its blocked step (AB_BLOCKED picks the latter).
#define ARM(name, ns) {name, ns::cpu::linear_mse_step, ns::cpu::linear_mse_step_blocked}
struct Arm { const char* name; Step step, blocked; };
const Arm kArms[] = {ARM("old", tbold), ARM("new", tb), ARM("v1", tbv1), ARM("v2", tbv2), ARM("v3", tbv3), ARM("v4", tbv4)};
Step pick(const std::string& n) {
  if (n == "blocked") return tb::cpu::linear_mse_step_blocked;
  for (const Arm& a : kArms) {
    if (n == a.name) return getenv("AB_BLOCKED") ? a.blocked : a.step;
  }
  fprintf(stderr, "unknown %s\n", n.c_str()); exit(2);
}
int main(int argc, char** argv) {
  const int64_t o = atoi(argv[1]), D = 1024, B = getenv("AB_B") ? atoi(getenv("AB_B")) : 4096, nb = getenv("AB_NB") ? atoi(getenv("AB_NB")) : 8; const int64_t rep_in = getenv("AB_REP") ? atoi(getenv("AB_REP")) : 1; const int reps = atoi(argv[2]);
  const char* split_env = getenv("AB_SPLIT");  // "S": arm B runs new on outputs [0,S) and [S,O) separately
  const int64_t S = split_env ? atoi(split_env) : 0;
  Step f[2] = {pick(argv[3]), pick(argv[4])};
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(nb * B * D), t(nb * B * o), w(o * D), b(o), dw[2] = {std::vector<float>(o * D), std::vector<float>(o * D)}, db[2] = {std::vector<float>(o), std::vector<float>(o)};
  for (auto& v : x) v = u(rng); for (auto& v : t) v = u(rng); for (auto& v : w) v = u(rng) * 0.01f;
  std::vector<float> t1(S > 0 ? nb * B * S : 0), t2(S > 0 ? nb * B * (o - S) : 0);
  for (int64_t r = 0; S > 0 && r < nb * B; ++r)
    for (int64_t j = 0; j < o; ++j) (j < S ? t1[r * S + j] : t2[r * (o - S) + j - S]) = t[r * o + j];
  std::vector<double> tt[2], ratio;
  for (int r = 0; r < reps + 1; ++r) {
    double s[2];
    for (int k = 0; k < 2; ++k) {
      const int which = (k + r) % 2;
      auto t0 = std::chrono::steady_clock::now();
      for (int64_t q = 0; q < nb * rep_in; ++q) {
        if (which == 1 && S > 0) {
          const float* xq = x.data() + q % nb * B * D;
          double l = f[1](xq, t1.data() + q % nb * B * S, B, D, S, w.data(), b.data(), 1.0f / (B * o), dw[1].data(), db[1].data());
          l += f[1](xq, t2.data() + q % nb * B * (o - S), B, D, o - S, w.data() + S * D, b.data() + S, 1.0f / (B * o), dw[1].data() + S * D, db[1].data() + S);
          (void)l;
          continue;
        }
        f[which](x.data() + q % nb * B * D, t.data() + q % nb * B * o, B, D, o, w.data(), b.data(), 1.0f / (B * o), dw[which].data(), db[which].data());
      }
      s[which] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    if (r == 0) continue;  // warm-up
    tt[0].push_back(s[0]); tt[1].push_back(s[1]); ratio.push_back(s[0] / s[1]);
  }
  double md = 0, mx = 0;
  for (size_t i = 0; i < dw[0].size(); ++i) { md = std::max(md, (double)std::fabs(dw[0][i] - dw[1][i])); mx = std::max(mx, (double)std::fabs(dw[0][i])); }
  if (!getenv("AB_NOCHECK") && md > 1e-4 * mx + 1e-7) { printf("results differ! %g of %g\n", md, mx); return 1; }
  for (auto& v : tt) std::sort(v.begin(), v.end());
  std::sort(ratio.begin(), ratio.end());
  const double fl = 4.0 * B * D * o * nb * rep_in;
  printf("O=%3ld %s %.1f  %s %.1f GFLOP/s (medians)  %s/%s per pair median %.3f [%.3f-%.3f] (%d pairs)\n", (long)o, argv[3], fl / tt[0][reps / 2] / 1e9,
         argv[4], fl / tt[1][reps / 2] / 1e9, argv[4], argv[3], ratio[reps / 2], ratio[0], ratio[reps - 1], reps);
}
