// bench/micro/bench_cpu_kernels.cpp — Google Benchmark micro-benchmarks of the
// float32 CPU kernels (tb::cpu, OpenMP with the default team: all cores).
// BM_gemm_cpu/<role>/<NN|NT|TN|TT>/<M>x<N>x<K> at the suite's shapes (B batch,
// D in, H hidden, O out; MLP 784-256-256-10 with B = 256, linear 64 -> 1 with
// B = 1024) reports FLOP/s; BM_<op>_cpu/<B>x<N> reports B/s (counters, bench_rates.h). Each GEMM run
// also spot-checks a few elements of C against a double dot product.
// BM_linear_step_cpu/<fused|blocked|gemm>/<B>x<D>x<O>: a linear regression step (forward,
// MSE loss and gradients) as cpu-omp takes it (fused: linear_mse_step, which picks the
// one-pass sweep or the blocked step by O), the blocked step alone, and the two-GEMM path
// it replaced; FLOP/s over 4 B D O per call, db spot-checked against double.
// --tb_smoke (stripped before Google Benchmark sees argv) registers tiny shapes
// only, for the ctest smoke test.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/micro/bench_flags.h"
#include "bench/micro/bench_rates.h"
#include "bench/micro/gemm_check.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear_step.h"

namespace {

std::vector<float> random_vec(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = u(rng);
  return x;
}

// ---- GEMM --------------------------------------------------------------------------
struct GemmShape {
  const char* role;  // where the suite uses it
  bool ta, tb;
  int64_t m, n, k;
};

// C = op(A) op(B) with beta = 0, as the training step calls it.
void bm_gemm(benchmark::State& state, GemmShape s) {
  const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  const std::vector<float> a = random_vec(s.m * s.k, 1), b = random_vec(s.k * s.n, 2);
  std::vector<float> c(static_cast<size_t>(s.m * s.n));
  for (auto _ : state) {
    tb::cpu::gemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(),
                  s.n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  // Spot check (outside the timed loop): a wrong kernel must not report a speed.
  const tb::bench::GemmError e = tb::bench::gemm_error({s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb},
                                                       c.data(), s.n, 8);
  if (!(e.worst <= 1.0)) {
    state.SkipWithError(("wrong result at C(" + std::to_string(e.i) + "," + std::to_string(e.j) + ")").c_str());
    return;
  }
  // FLOP per call; the counter is a rate over the (real) time (bench_rates.h).
  const double flop = 2.0 * double(s.m) * double(s.n) * double(s.k);
  tb::bench::set_flop_rate(state, flop);
}

void register_gemm(const GemmShape& s) {
  const std::string name = std::string("BM_gemm_cpu/") + s.role + "/" + (s.ta ? "T" : "N") +
                           (s.tb ? "T" : "N") + "/" + std::to_string(s.m) + "x" +
                           std::to_string(s.n) + "x" + std::to_string(s.k);
  benchmark::RegisterBenchmark(name.c_str(), bm_gemm, s)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

// ---- elementwise ops -----------------------------------------------------------------
// Each sets bytes = bytes read + written per call.

void bm_bias_act_forward(benchmark::State& state, int64_t rows, int64_t cols) {
  std::vector<float> z = random_vec(rows * cols, 3);
  const std::vector<float> bias = random_vec(cols, 4);
  for (auto _ : state) {
    tb::cpu::bias_act_forward(z.data(), bias.data(), rows, cols, true);
    benchmark::ClobberMemory();
  }
  tb::bench::set_byte_rate(state, (2 * rows * cols + cols) * int64_t{sizeof(float)});
}

void bm_relu_backward(benchmark::State& state, int64_t rows, int64_t cols) {
  std::vector<float> g = random_vec(rows * cols, 5);
  const std::vector<float> a = random_vec(rows * cols, 6, 0.0f, 1.0f);  // all > 0: g is kept
  for (auto _ : state) {
    tb::cpu::relu_backward(g.data(), a.data(), rows, cols);
    benchmark::ClobberMemory();
  }
  tb::bench::set_byte_rate(state, 3 * rows * cols * int64_t{sizeof(float)});
}

void bm_column_sum(benchmark::State& state, int64_t rows, int64_t cols) {
  const std::vector<float> g = random_vec(rows * cols, 7);
  std::vector<float> db(static_cast<size_t>(cols));
  for (auto _ : state) {
    tb::cpu::column_sum(g.data(), rows, cols, db.data());
    benchmark::DoNotOptimize(db.data());
    benchmark::ClobberMemory();
  }
  tb::bench::set_byte_rate(state, (rows * cols + cols) * int64_t{sizeof(float)});
}

void bm_mse_loss_grad(benchmark::State& state, int64_t rows, int64_t cols) {
  const std::vector<float> y = random_vec(rows * cols, 8), t = random_vec(rows * cols, 9);
  std::vector<float> grad(static_cast<size_t>(rows * cols));
  const float inv_count = 1.0f / float(rows * cols);
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        tb::cpu::mse_loss_grad(y.data(), t.data(), rows, cols, inv_count, grad.data()));
    benchmark::ClobberMemory();
  }
  tb::bench::set_byte_rate(state, 3 * rows * cols * int64_t{sizeof(float)});
}

void bm_softmax_xent_loss_grad(benchmark::State& state, int64_t rows, int64_t k) {
  const std::vector<float> z = random_vec(rows * k, 10, -4.0f, 4.0f);
  std::vector<int32_t> labels(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) labels[r] = static_cast<int32_t>((r * 7) % k);
  std::vector<float> dz(static_cast<size_t>(rows * k));
  int64_t correct = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tb::cpu::softmax_xent_loss_grad(z.data(), labels.data(), rows, k,
                                                             1.0f / float(rows), dz.data(),
                                                             &correct));
    benchmark::ClobberMemory();
  }
  tb::bench::set_byte_rate(state, (2 * rows * k * int64_t{sizeof(float)} + rows * int64_t{sizeof(int32_t)}));
}

void bm_sgd_update(benchmark::State& state, int64_t n) {
  std::vector<float> p = random_vec(n, 11), v(static_cast<size_t>(n), 0.0f);
  const std::vector<float> g = random_vec(n, 12, -1e-3f, 1e-3f);
  for (auto _ : state) {
    tb::cpu::sgd_update(p.data(), g.data(), v.data(), n, 1e-3f, 0.9f, 1e-4f);
    benchmark::ClobberMemory();
  }
  // p and v read and written, g read.
  tb::bench::set_byte_rate(state, 5 * n * int64_t{sizeof(float)});
}

// ---- the linear regression step ------------------------------------------------------
enum class StepPath { kFused, kBlocked, kGemm };

void bm_linear_step(benchmark::State& state, StepPath path, int64_t rows, int64_t d, int64_t o) {
  const std::vector<float> x = random_vec(rows * d, 13), t = random_vec(rows * o, 14);
  const std::vector<float> w = random_vec(o * d, 15, -0.05f, 0.05f), b = random_vec(o, 16);
  std::vector<float> dw(static_cast<size_t>(o * d)), db(static_cast<size_t>(o)), z(static_cast<size_t>(rows * o));
  const float inv = 1.0f / float(rows * o);
  for (auto _ : state) {
    if (path == StepPath::kFused) {
      benchmark::DoNotOptimize(tb::cpu::linear_mse_step(x.data(), t.data(), rows, d, o, w.data(), b.data(), inv,
                                                        dw.data(), db.data()));
    } else if (path == StepPath::kBlocked) {
      benchmark::DoNotOptimize(tb::cpu::linear_mse_step_blocked(x.data(), t.data(), rows, d, o, w.data(), b.data(),
                                                                inv, dw.data(), db.data()));
    } else {  // what cpu-omp ran for O > 64 before: forward GEMM, bias, loss, dW GEMM, db
      tb::cpu::gemm(false, true, rows, o, d, 1.0f, x.data(), d, w.data(), d, 0.0f, z.data(), o);
      tb::cpu::bias_act_forward(z.data(), b.data(), rows, o, false);
      benchmark::DoNotOptimize(tb::cpu::mse_loss_grad(z.data(), t.data(), rows, o, inv, z.data()));
      tb::cpu::gemm(true, false, o, d, rows, 1.0f, z.data(), o, x.data(), d, 0.0f, dw.data(), d);
      tb::cpu::column_sum(z.data(), rows, o, db.data());
    }
    benchmark::ClobberMemory();
  }
  // Spot check outside the timed loop: db[j] = sum over rows of 2 (z - t) inv, in double,
  // for a few outputs; float32 sums over D and B stay far inside 1e-3 of the magnitudes.
  for (const int64_t j : {int64_t{0}, o / 2, o - 1}) {
    double want = 0, mag = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double zr = b[j];
      for (int64_t p = 0; p < d; ++p) zr += double(x[r * d + p]) * w[j * d + p];
      want += 2 * (zr - t[r * o + j]) * inv;
      mag += std::fabs(2 * (zr - t[r * o + j]) * inv);
    }
    if (!(std::fabs(db[j] - want) <= 1e-3 * mag)) {
      state.SkipWithError(("wrong db[" + std::to_string(j) + "]").c_str());
      return;
    }
  }
  tb::bench::set_flop_rate(state, 4.0 * double(rows) * double(d) * double(o));
}

template <class Fn, class... Args>
void register_op(const char* op, const std::string& shape, Fn fn, Args... args) {
  const std::string name = std::string("BM_") + op + "_cpu/" + shape;
  benchmark::RegisterBenchmark(name.c_str(), fn, args...)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

std::string dims(int64_t rows, int64_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

void register_all(bool smoke) {
  if (smoke) {
    for (const GemmShape& s : {GemmShape{"smoke", false, true, 33, 17, 40},
                               GemmShape{"smoke", true, false, 17, 40, 33},
                               GemmShape{"smoke", false, false, 33, 40, 17},
                               GemmShape{"smoke", false, true, 64, 1, 16}})
      register_gemm(s);
  } else {
    const GemmShape shapes[] = {
        // linear 64 -> 1, B = 1024: forward y = X w^T, weight gradient dw = dy^T X
        {"linear_fwd", false, true, 1024, 1, 64},
        {"linear_bwd_dW", true, false, 1, 64, 1024},
        // MLP 784-256-256-10, B = 256, forward Z = A W^T (M = B, N = out, K = in)
        {"mlp_fwd", false, true, 256, 256, 784},
        {"mlp_fwd", false, true, 256, 256, 256},
        {"mlp_fwd", false, true, 256, 10, 256},
        // backward, weight gradients dW = dZ^T A (M = out, N = in, K = B)
        {"mlp_bwd_dW", true, false, 10, 256, 256},
        {"mlp_bwd_dW", true, false, 256, 256, 256},
        {"mlp_bwd_dW", true, false, 256, 784, 256},
        // backward, input gradients dA = dZ W (M = B, N = in, K = out); none for layer 1
        {"mlp_bwd_dA", false, false, 256, 256, 10},
        {"mlp_bwd_dA", false, false, 256, 256, 256},
        // large square-ish problem: how close to peak the kernel gets
        {"large", false, false, 1024, 1024, 4096},
    };
    for (const GemmShape& s : shapes) register_gemm(s);
  }

  // Elementwise shapes: hidden activations B x H, logits B x O (K classes), all
  // parameters of the MLP for SGD (784*256 + 256 + 256*256 + 256 + 256*10 + 10).
  struct Rc {
    int64_t rows, cols;
  };
  const std::vector<Rc> act = smoke ? std::vector<Rc>{{8, 16}} : std::vector<Rc>{{256, 256}, {1024, 1024}};
  const std::vector<Rc> logits = smoke ? std::vector<Rc>{{8, 10}} : std::vector<Rc>{{256, 10}, {1024, 1}};
  const std::vector<int64_t> params = smoke ? std::vector<int64_t>{100} : std::vector<int64_t>{269322, 1 << 22};
  for (const Rc& d : act) {
    register_op("bias_act_forward", dims(d.rows, d.cols), bm_bias_act_forward, d.rows, d.cols);
    register_op("relu_backward", dims(d.rows, d.cols), bm_relu_backward, d.rows, d.cols);
    register_op("column_sum", dims(d.rows, d.cols), bm_column_sum, d.rows, d.cols);
  }
  for (const Rc& d : logits) {
    register_op("mse_loss_grad", dims(d.rows, d.cols), bm_mse_loss_grad, d.rows, d.cols);
    if (d.cols > 1)
      register_op("softmax_xent_loss_grad", dims(d.rows, d.cols), bm_softmax_xent_loss_grad, d.rows,
                  d.cols);
  }
  for (int64_t n : params) register_op("sgd_update", std::to_string(n), bm_sgd_update, n);

  // Linear 1024 -> O steps at the perf suite's batch (B 4096); smoke: a tiny one.
  const int64_t step_rows = smoke ? 100 : 4096, step_d = smoke ? 40 : 1024;
  const std::vector<int64_t> widths =
      smoke ? std::vector<int64_t>{3, 70} : std::vector<int64_t>{16, 33, 48, 64, 128, 256};
  for (const int64_t o : widths) {
    const std::string shape = std::to_string(step_rows) + "x" + std::to_string(step_d) + "x" + std::to_string(o);
    register_op("linear_step", "fused/" + shape, bm_linear_step, StepPath::kFused, step_rows, step_d, o);
    register_op("linear_step", "blocked/" + shape, bm_linear_step, StepPath::kBlocked, step_rows, step_d, o);
    register_op("linear_step", "gemm/" + shape, bm_linear_step, StepPath::kGemm, step_rows, step_d, o);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool smoke = tb::bench::take_flag(&argc, argv, "--tb_smoke");

  register_all(smoke);
  benchmark::AddCustomContext("omp_max_threads", std::to_string(omp_get_max_threads()));
  benchmark::AddCustomContext("tb_smoke", smoke ? "true" : "false");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
