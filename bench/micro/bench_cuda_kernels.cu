// bench/micro/bench_cuda_kernels.cu — Google Benchmark micro-benchmarks of the CUDA
// side (device 0), timed with CUDA events recorded in-stream (manual time):
//   BM_memcpy_cuda/<h2d|d2h>/<pageable|pinned>/<bytes>            B/s
//   BM_gemm_cuda/<workload>/<fp32|tf32>/<fwd|dW|dA>/<NN|NT|TN>/<M>x<N>x<K>   FLOP/s
//   BM_<op>_cuda/<B>x<N> (or /<n>)                                  B/s
//   BM_linear_step_cuda/<fused|gemm>/<B>x<D>x<O>                    B/s (X and y read once)
// (counters "FLOP/s" and "B/s", bench_rates.h: 1000-based, over the event time)
// GEMM shapes are the default suite's layers (B batch; forward Z = A W^T is NT with
// M = B, N = out, K = in; dW = dZ^T A is TN; dA = dZ W is NN); each GEMM run spot-
// checks C against a double dot product. One iteration = one call, timed over a
// batch of kBatch back-to-back calls (event resolution, launch gaps as in training).
// Without a usable device main() prints "tb_microbench_cuda: skipped: <reason>" and
// exits 0. --tb_smoke (stripped before Google Benchmark sees argv): tiny shapes only.
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench/micro/bench_flags.h"
#include "bench/micro/bench_rates.h"
#include "bench/micro/gemm_check.h"
#include "kernels/cuda/axpy.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/linear_step.h"

namespace {

using tb::cuda::DeviceBuffer;

constexpr int kBatch = 10;  // calls per timed iteration (kernels and GEMMs)

// The stream, cuBLAS handle and timing events every benchmark shares.
struct Gpu {
  cudaStream_t stream = nullptr;
  cublasHandle_t handle = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};
Gpu g_gpu;


std::vector<float> random_vec(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = u(rng);
  return x;
}

// Runs `calls` of enqueue() per iteration between two events on the shared stream and
// reports the elapsed GPU time per call. One untimed warm-up call first.
template <class Fn>
void time_calls(benchmark::State& state, int calls, const Fn& enqueue) {
  enqueue();
  TB_CUDA_CHECK(cudaStreamSynchronize(g_gpu.stream));
  for (auto _ : state) {
    TB_CUDA_CHECK(cudaEventRecord(g_gpu.start, g_gpu.stream));
    for (int i = 0; i < calls; ++i) enqueue();
    TB_CUDA_CHECK(cudaEventRecord(g_gpu.stop, g_gpu.stream));
    TB_CUDA_CHECK(cudaEventSynchronize(g_gpu.stop));
    float ms = 0.0f;
    TB_CUDA_CHECK(cudaEventElapsedTime(&ms, g_gpu.start, g_gpu.stop));
    state.SetIterationTime(double(ms) * 1e-3 / calls);
  }
}

// A CUDA or cuBLAS error inside a benchmark becomes its error (printed as
// "ERROR OCCURRED", which fails the smoke test) instead of terminating the run.
template <class Body>
void guarded(benchmark::State& state, const Body& body) {
  try {
    body();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// ---- host <-> device copies ------------------------------------------------------------
void bm_memcpy(benchmark::State& state, bool h2d, bool pinned, int64_t bytes) {
  guarded(state, [&] {
    DeviceBuffer<char> dev(bytes, g_gpu.stream);
    std::vector<char> pageable;
    char* host = nullptr;
    if (pinned) {
      TB_CUDA_CHECK(cudaMallocHost(&host, static_cast<size_t>(bytes)));
      std::memset(host, 1, static_cast<size_t>(bytes));
    } else {
      pageable.assign(static_cast<size_t>(bytes), 1);  // touched: pages exist
      host = pageable.data();
    }
    const size_t n = static_cast<size_t>(bytes);
    try {
      time_calls(state, 1, [&] {
        TB_CUDA_CHECK(h2d ? cudaMemcpyAsync(dev.get(), host, n, cudaMemcpyHostToDevice, g_gpu.stream)
                          : cudaMemcpyAsync(host, dev.get(), n, cudaMemcpyDeviceToHost, g_gpu.stream));
      });
    } catch (...) {
      if (pinned) TB_CUDA_WARN(cudaFreeHost(host));
      throw;
    }
    if (pinned) TB_CUDA_CHECK(cudaFreeHost(host));
    tb::bench::set_byte_rate(state, bytes);
  });
}

// Device-to-device copy: the device memory bandwidth a resident-data step can use.
// B/s counts 2 x size (every byte is read once and written once).
void bm_memcpy_d2d(benchmark::State& state, int64_t bytes) {
  guarded(state, [&] {
    DeviceBuffer<char> src(bytes, g_gpu.stream), dst(bytes, g_gpu.stream);
    TB_CUDA_CHECK(cudaMemsetAsync(src.get(), 1, static_cast<size_t>(bytes), g_gpu.stream));
    time_calls(state, 1, [&] {
      TB_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                                    g_gpu.stream));
    });
    tb::bench::set_byte_rate(state, 2 * bytes);
  });
}

// ---- GEMM ------------------------------------------------------------------------------------
struct GemmShape {
  std::string workload, role;
  bool ta, tb;
  int64_t m, n, k;
};

// C = op(A) op(B), beta = 0, as the training step calls it; then 8 elements of C
// against a double dot product: fp32 |err| <= (K + 8) 2^-23 sum|a b|; TF32 (operands
// cut to 10 mantissa bits, products off by <= ~2^-9) adds 2^-8 sum|a b|.
void bm_gemm(benchmark::State& state, GemmShape s, bool tf32) {
  guarded(state, [&] {
    const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    const std::vector<float> a = random_vec(s.m * s.k, 1), b = random_vec(s.k * s.n, 2);
    DeviceBuffer<float> da(a, g_gpu.stream), db(b, g_gpu.stream), dc(s.m * s.n, g_gpu.stream);
    tb::cuda::set_tf32(g_gpu.handle, tf32);
    time_calls(state, kBatch, [&] {
      tb::cuda::gemm(g_gpu.handle, s.ta, s.tb, s.m, s.n, s.k, 1.0f, da.get(), lda, db.get(), ldb, 0.0f, dc.get(), s.n,
                     g_gpu.stream);
    });
    tb::cuda::set_tf32(g_gpu.handle, false);
    const std::vector<float> c = dc.download();
    const tb::bench::GemmError e = tb::bench::gemm_error({s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb},
                                                         c.data(), s.n, 8, tf32 ? std::ldexp(1.0, -8) : 0.0);
    if (!(e.worst <= 1.0)) {
      state.SkipWithError(("wrong result at C(" + std::to_string(e.i) + "," + std::to_string(e.j) + ")").c_str());
      return;
    }
    const double flop = 2.0 * double(s.m) * double(s.n) * double(s.k);
    tb::bench::set_flop_rate(state, flop);
  });
}

void register_gemm(const GemmShape& s, bool tf32) {
  const std::string name = "BM_gemm_cuda/" + s.workload + "/" + (tf32 ? "tf32" : "fp32") + "/" + s.role + "/" +
                           (s.ta ? "T" : "N") + (s.tb ? "T" : "N") + "/" + std::to_string(s.m) + "x" +
                           std::to_string(s.n) + "x" + std::to_string(s.k);
  benchmark::RegisterBenchmark(name.c_str(), bm_gemm, s, tf32)->UseManualTime()->Unit(benchmark::kMicrosecond);
}

// Every GEMM of one training step of a workload: per layer in -> out, forward (NT),
// weight gradient (TN) and, past the first layer, input gradient (NN).
void register_workload(const std::string& workload, const std::vector<int64_t>& layers, int64_t batch) {
  std::set<std::string> seen;
  for (size_t l = 0; l + 1 < layers.size(); ++l) {
    const int64_t in = layers[l], out = layers[l + 1];
    std::vector<GemmShape> shapes = {{workload, "fwd", false, true, batch, out, in},
                                     {workload, "dW", true, false, out, in, batch}};
    if (l > 0) shapes.push_back({workload, "dA", false, false, batch, in, out});
    for (const GemmShape& s : shapes) {
      const std::string key = s.role + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
      if (!seen.insert(key).second) continue;
      register_gemm(s, false);
      register_gemm(s, true);
    }
  }
}

// ---- elementwise ops (bytes = bytes read + written per call) ------------------------------------
void bm_bias_act_forward(benchmark::State& state, int64_t rows, int64_t cols) {
  guarded(state, [&] {
    DeviceBuffer<float> z(random_vec(rows * cols, 3), g_gpu.stream), bias(random_vec(cols, 4), g_gpu.stream);
    time_calls(state, kBatch, [&] { tb::cuda::bias_act_forward(z.get(), bias.get(), rows, cols, true, g_gpu.stream); });
    tb::bench::set_byte_rate(state, (2 * rows * cols + cols) * int64_t{sizeof(float)});
  });
}

void bm_relu_backward(benchmark::State& state, int64_t rows, int64_t cols) {
  guarded(state, [&] {
    DeviceBuffer<float> g(random_vec(rows * cols, 5), g_gpu.stream),
        a(random_vec(rows * cols, 6, 0.0f, 1.0f), g_gpu.stream);
    time_calls(state, kBatch, [&] { tb::cuda::relu_backward(g.get(), a.get(), rows, cols, g_gpu.stream); });
    tb::bench::set_byte_rate(state, 3 * rows * cols * int64_t{sizeof(float)});
  });
}

// The bias gradient: one column (a linear model), a few, a wide layer. Rows are split
// over blocks (two launches through the workspace where B is large enough).
void bm_column_sum(benchmark::State& state, int64_t rows, int64_t cols) {
  guarded(state, [&] {
    const int64_t ws_elems = tb::cuda::column_sum_workspace_elems(rows, cols);
    DeviceBuffer<float> g(random_vec(rows * cols, 7), g_gpu.stream), db(cols, g_gpu.stream);
    DeviceBuffer<double> ws(ws_elems, g_gpu.stream);
    time_calls(state, kBatch, [&] {
      tb::cuda::column_sum(g.get(), rows, cols, db.get(), ws.get(), ws_elems, g_gpu.stream);
    });
    tb::bench::set_byte_rate(state, (rows * cols + cols) * int64_t{sizeof(float)});
  });
}

// One linear-regression step's gradients and loss (D inputs, O outputs, B rows):
// `fused` is tb::cuda::linear_mse_step (one pass over X); `gemm` the path it replaces
// (forward GEMM, bias, MSE, dW GEMM, column sum: X read twice). B/s counts what the
// step must read, X and y once: B (D + O) 4 bytes, the byte count bench/gpu_targets.py
// credits per sample, so the two variants' B/s compare directly.
void bm_linear_step(benchmark::State& state, bool fused, int64_t rows, int64_t d, int64_t o) {
  guarded(state, [&] {
    DeviceBuffer<float> x(random_vec(rows * d, 17), g_gpu.stream), t(random_vec(rows * o, 18), g_gpu.stream);
    DeviceBuffer<float> w(random_vec(o * d, 19), g_gpu.stream), b(random_vec(o, 20), g_gpu.stream);
    DeviceBuffer<float> dw(o * d, g_gpu.stream), db(o, g_gpu.stream);
    DeviceBuffer<double> loss(std::vector<double>{0.0}, g_gpu.stream);
    const float inv = 1.0f / float(rows * o);
    if (fused) {
      const int64_t ws_bytes = tb::cuda::linear_mse_step_workspace_bytes(rows, d, o);
      DeviceBuffer<char> ws(ws_bytes, g_gpu.stream);
      time_calls(state, kBatch, [&] {
        tb::cuda::linear_mse_step(x.get(), t.get(), rows, d, o, w.get(), b.get(), inv, dw.get(), db.get(), loss.get(),
                                  ws.get(), ws_bytes, g_gpu.stream);
      });
    } else {
      const int64_t ws_elems = tb::cuda::column_sum_workspace_elems(rows, o);
      DeviceBuffer<float> z(rows * o, g_gpu.stream), g(rows * o, g_gpu.stream);
      DeviceBuffer<double> ws(ws_elems, g_gpu.stream);
      time_calls(state, kBatch, [&] {
        tb::cuda::gemm(g_gpu.handle, false, true, rows, o, d, 1.0f, x.get(), d, w.get(), d, 0.0f, z.get(), o,
                       g_gpu.stream);
        tb::cuda::bias_act_forward(z.get(), b.get(), rows, o, false, g_gpu.stream);
        tb::cuda::mse_loss_grad(z.get(), t.get(), rows, o, inv, g.get(), loss.get(), g_gpu.stream);
        tb::cuda::gemm(g_gpu.handle, true, false, o, d, rows, 1.0f, g.get(), o, x.get(), d, 0.0f, dw.get(), d,
                       g_gpu.stream);
        tb::cuda::column_sum(g.get(), rows, o, db.get(), ws.get(), ws_elems, g_gpu.stream);
      });
    }
    tb::bench::set_byte_rate(state, rows * (d + o) * int64_t{sizeof(float)});
  });
}

void bm_mse_loss_grad(benchmark::State& state, int64_t rows, int64_t cols) {
  guarded(state, [&] {
    DeviceBuffer<float> y(random_vec(rows * cols, 8), g_gpu.stream), t(random_vec(rows * cols, 9), g_gpu.stream),
        grad(rows * cols, g_gpu.stream);
    DeviceBuffer<double> loss(std::vector<double>{0.0}, g_gpu.stream);
    const float inv_count = 1.0f / float(rows * cols);
    time_calls(state, kBatch, [&] {
      tb::cuda::mse_loss_grad(y.get(), t.get(), rows, cols, inv_count, grad.get(), loss.get(), g_gpu.stream);
    });
    tb::bench::set_byte_rate(state, 3 * rows * cols * int64_t{sizeof(float)});
  });
}

void bm_softmax_xent_loss_grad(benchmark::State& state, int64_t rows, int64_t k) {
  guarded(state, [&] {
    std::vector<int32_t> labels(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) labels[r] = static_cast<int32_t>((r * 7) % k);
    DeviceBuffer<float> z(random_vec(rows * k, 10, -4.0f, 4.0f), g_gpu.stream), dz(rows * k, g_gpu.stream);
    DeviceBuffer<int32_t> dlabels(labels, g_gpu.stream);
    DeviceBuffer<double> loss(std::vector<double>{0.0}, g_gpu.stream);
    DeviceBuffer<unsigned long long> correct(std::vector<unsigned long long>{0}, g_gpu.stream);
    time_calls(state, kBatch, [&] {
      tb::cuda::softmax_xent_loss_grad(z.get(), dlabels.get(), rows, k, 1.0f / float(rows), dz.get(), loss.get(),
                                       correct.get(), g_gpu.stream);
    });
    tb::bench::set_byte_rate(state, (2 * rows * k * int64_t{sizeof(float)} + rows * int64_t{sizeof(int32_t)}));
  });
}

void bm_sgd_update(benchmark::State& state, int64_t n) {
  guarded(state, [&] {
    DeviceBuffer<float> p(random_vec(n, 11), g_gpu.stream),
        v(std::vector<float>(static_cast<size_t>(n), 0.0f), g_gpu.stream),
        g(random_vec(n, 12, -1e-3f, 1e-3f), g_gpu.stream);
    time_calls(state, kBatch,
               [&] { tb::cuda::sgd_update(p.get(), g.get(), v.get(), n, 1e-3f, 0.9f, 1e-4f, g_gpu.stream); });
    tb::bench::set_byte_rate(state, 5 * n * int64_t{sizeof(float)});  // p, v r+w; g r
  });
}

// cuda-dp's gradient sum where peer copies replace NCCL: dst (n) += src (n).
void bm_add_inplace(benchmark::State& state, int64_t n) {
  guarded(state, [&] {
    DeviceBuffer<float> dst(random_vec(n, 15), g_gpu.stream), src(random_vec(n, 16, -1e-3f, 1e-3f), g_gpu.stream);
    time_calls(state, kBatch, [&] { tb::cuda::add_inplace(dst.get(), src.get(), n, g_gpu.stream); });
    tb::bench::set_byte_rate(state, 3 * n * int64_t{sizeof(float)});  // dst r+w; src r
  });
}

// A shuffled batch: `count` rows of width floats (and their labels) out of src_rows.
void bm_gather(benchmark::State& state, int64_t src_rows, int64_t count, int64_t width) {
  guarded(state, [&] {
    std::vector<int64_t> rows(static_cast<size_t>(count));
    std::mt19937 rng(13);
    for (int64_t& r : rows) r = static_cast<int64_t>(rng() % static_cast<uint32_t>(src_rows));
    DeviceBuffer<float> src(random_vec(src_rows * width, 14), g_gpu.stream), dst(count * width, g_gpu.stream);
    DeviceBuffer<int32_t> labels(std::vector<int32_t>(static_cast<size_t>(src_rows), 1), g_gpu.stream),
        lab_dst(count, g_gpu.stream);
    DeviceBuffer<int64_t> drows(rows, g_gpu.stream);
    time_calls(state, kBatch, [&] {
      tb::cuda::gather_rows(src.get(), drows.get(), count, width, dst.get(), g_gpu.stream);
      tb::cuda::gather_labels(labels.get(), drows.get(), count, lab_dst.get(), g_gpu.stream);
    });
    tb::bench::set_byte_rate(state, count *
        (2 * width * int64_t{sizeof(float)} + 2 * int64_t{sizeof(int64_t)} + 2 * int64_t{sizeof(int32_t)}));
  });
}

template <class Fn, class... Args>
void register_op(const char* op, const std::string& shape, Fn fn, Args... args) {
  const std::string name = std::string("BM_") + op + "_cuda/" + shape;
  benchmark::RegisterBenchmark(name.c_str(), fn, args...)->UseManualTime()->Unit(benchmark::kMicrosecond);
}

std::string dims(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

void register_all(bool smoke) {
  const std::vector<int64_t> copy_bytes = smoke ? std::vector<int64_t>{4 << 10, 1 << 20}
                                                : std::vector<int64_t>{4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20};
  for (bool h2d : {true, false})
    for (bool pinned : {false, true})
      for (int64_t bytes : copy_bytes)
        register_op("memcpy",
                    std::string(h2d ? "h2d/" : "d2h/") + (pinned ? "pinned/" : "pageable/") + std::to_string(bytes),
                    bm_memcpy, h2d, pinned, bytes);
  for (int64_t bytes : copy_bytes) register_op("memcpy", "d2d/" + std::to_string(bytes), bm_memcpy_d2d, bytes);

  if (smoke) {
    register_workload("smoke", {40, 17, 5}, 33);
  } else {
    // bench/suites/default.suite: model layers and batch size.
    register_workload("linear-64x1", {64, 1}, 1024);
    register_workload("linear-1024x16", {1024, 16}, 4096);
    register_workload("mlp-64x128x10", {64, 128, 10}, 256);
    register_workload("mlp-784x256x256x10", {784, 256, 256, 10}, 256);
    register_workload("mlp-1024x4096x4096x4096x1000", {1024, 4096, 4096, 4096, 1000}, 1024);
  }

  // Hidden activations B x H, logits B x O (K classes), parameter counts for SGD
  // (MLP 784-256-256-10: 269322; 2^24 as a large model), shuffled-batch gathers.
  struct Rc {
    int64_t rows, cols;
  };
  const std::vector<Rc> act = smoke ? std::vector<Rc>{{8, 16}} : std::vector<Rc>{{256, 256}, {1024, 4096}};
  const std::vector<Rc> logits = smoke ? std::vector<Rc>{{8, 10}} : std::vector<Rc>{{256, 10}, {1024, 1000}};
  const std::vector<int64_t> params = smoke ? std::vector<int64_t>{100} : std::vector<int64_t>{269322, 1 << 24};
  for (const Rc& d : act) {
    register_op("bias_act_forward", dims(d.rows, d.cols), bm_bias_act_forward, d.rows, d.cols);
    register_op("relu_backward", dims(d.rows, d.cols), bm_relu_backward, d.rows, d.cols);
  }
  // Bias gradients: a linear model's one column over a 1M-row batch, 16 outputs, a
  // 1000-wide layer, and the hidden activations above.
  std::vector<Rc> colsums = smoke ? std::vector<Rc>{{5000, 1}, {8, 16}}
                                  : std::vector<Rc>{{1 << 20, 1}, {4096, 16}, {256, 1000}, {256, 256}, {1024, 4096}};
  for (const Rc& d : colsums) register_op("column_sum", dims(d.rows, d.cols), bm_column_sum, d.rows, d.cols);
  // Linear regression steps (B x D -> O): the graph target's 1M x 64 -> 1 and the
  // default suite's 4096 x 1024 -> 16 (too wide for the fused step: GEMM path only).
  struct Step {
    int64_t rows, d, o;
  };
  const std::vector<Step> steps =
      smoke ? std::vector<Step>{{300, 33, 2}} : std::vector<Step>{{1 << 20, 64, 1}, {65536, 256, 16}, {4096, 1024, 16}};
  for (const Step& st : steps) {
    const std::string shape = std::to_string(st.rows) + "x" + std::to_string(st.d) + "x" + std::to_string(st.o);
    if (tb::cuda::linear_mse_step_applies(st.d, st.o))
      register_op("linear_step", "fused/" + shape, bm_linear_step, true, st.rows, st.d, st.o);
    register_op("linear_step", "gemm/" + shape, bm_linear_step, false, st.rows, st.d, st.o);
  }
  for (const Rc& d : logits) {
    register_op("mse_loss_grad", dims(d.rows, d.cols), bm_mse_loss_grad, d.rows, d.cols);
    register_op("softmax_xent_loss_grad", dims(d.rows, d.cols), bm_softmax_xent_loss_grad, d.rows, d.cols);
  }
  for (int64_t n : params) {
    register_op("sgd_update", std::to_string(n), bm_sgd_update, n);
    register_op("add_inplace", std::to_string(n), bm_add_inplace, n);
  }
  if (smoke) {
    register_op("gather", "64/8x16", bm_gather, int64_t{64}, int64_t{8}, int64_t{16});
  } else {
    register_op("gather", "60000/256x784", bm_gather, int64_t{60000}, int64_t{256}, int64_t{784});
    register_op("gather", "8192/1024x1024", bm_gather, int64_t{8192}, int64_t{1024}, int64_t{1024});
  }
}

void add_device_context() {
  int dev = 0, driver = 0, runtime = 0, cublas = 0;
  TB_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  TB_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  TB_CUDA_CHECK(cudaDriverGetVersion(&driver));
  TB_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  TB_CUBLAS_CHECK(cublasGetVersion(g_gpu.handle, &cublas));
  benchmark::AddCustomContext("gpu_name", prop.name);
  benchmark::AddCustomContext("gpu_compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor));
  benchmark::AddCustomContext("gpu_sm_count", std::to_string(prop.multiProcessorCount));
  benchmark::AddCustomContext("gpu_memory_bytes", std::to_string(prop.totalGlobalMem));
  benchmark::AddCustomContext("cuda_driver_version", std::to_string(driver));
  benchmark::AddCustomContext("cuda_runtime_version", std::to_string(runtime));
  benchmark::AddCustomContext("cublas_version", std::to_string(cublas));
}

}  // namespace

int main(int argc, char** argv) {
  const bool smoke = tb::bench::take_flag(&argc, argv, "--tb_smoke");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  const std::string reason = tb::cuda::unusable_device_reason();
  if (!reason.empty()) {
    std::printf("tb_microbench_cuda: skipped: %s\n", reason.c_str());
    return 0;
  }
  try {
    TB_CUDA_CHECK(cudaSetDevice(0));
    TB_CUDA_CHECK(cudaStreamCreateWithFlags(&g_gpu.stream, cudaStreamNonBlocking));
    TB_CUDA_CHECK(cudaEventCreate(&g_gpu.start));
    TB_CUDA_CHECK(cudaEventCreate(&g_gpu.stop));
    TB_CUBLAS_CHECK(cublasCreate(&g_gpu.handle));
    add_device_context();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tb_microbench_cuda: %s\n", e.what());
    return 1;
  }
  register_all(smoke);
  benchmark::AddCustomContext("tb_smoke", smoke ? "true" : "false");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (cublasDestroy(g_gpu.handle) != CUBLAS_STATUS_SUCCESS)
    std::fprintf(stderr, "tb_microbench_cuda: warning: cublasDestroy failed\n");
  TB_CUDA_WARN(cudaEventDestroy(g_gpu.start));
  TB_CUDA_WARN(cudaEventDestroy(g_gpu.stop));
  TB_CUDA_WARN(cudaStreamDestroy(g_gpu.stream));
  return 0;
}
