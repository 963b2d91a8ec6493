// tests/cuda/test_cuda_model.cpp — CudaModel (harness/backends/cuda_model.h) against its
// CPU twin CpuModel (harness/backends/cpu_model.h), method by method: the same parameters and
// batch (B rows of a global batch of G, D in, O out) through forward, loss, backward
// (gradients, and the on_layer order: last layer first) and SGD with momentum and weight
// decay over several steps; backward from an external dZ; evaluation over ranges; a
// graphed step against an eager one; linear regression's fused step against CpuModel's
// and the unfused path, eager and graphed; what a replica allocates. Runs on a GPU (label
// "cuda") and on the fake GPUs that compute on the host ("fake_gpu.*"); skips otherwise.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "harness/backends/cuda_model.h"
#include "harness/backends/cpu_model.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_buffer.h"
#include "tests/cuda/gpu_gate.h"
#include "tests/harness/test_helpers.h"

namespace tb {
namespace {

using cuda::DeviceBuffer;

class CudaModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TB_GPU_TEST_GATE();
    TB_CUDA_CHECK(cudaSetDevice(0));
  }
};

// The dataset on the device, as CudaModel reads it (rows from index 0).
struct DeviceData {
  DeviceData(const Dataset& d, cudaStream_t s) : x(d.x, s), y(d.y, s), labels(d.labels, s) {}
  DeviceBatch rows(int64_t r0, const Dataset& d) const {
    return rows_from(x.get(), y.get(), labels.get(), r0, d.d, d.o);
  }
  DeviceBuffer<float> x, y;
  DeviceBuffer<int32_t> labels;
};

template <class T>
std::vector<T> download(const T* p, int64_t n) {
  std::vector<T> h(static_cast<size_t>(n));
  // Legacy-stream copy: callers synchronise the model's stream first.
  TB_CUDA_CHECK(cudaMemcpy(h.data(), p, h.size() * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

double device_double(const double* p) { return download(p, 1)[0]; }

struct Case {
  const char* name;
  std::vector<int64_t> layers;
  Task task;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class CudaModelTwin : public CudaModelTest, public ::testing::WithParamInterface<Case> {};

// Three SGD steps on rows [5, 5 + B) as a shard of a global batch of G rows.
TEST_P(CudaModelTwin, ForwardLossBackwardAndUpdateMatchCpuModel) {
  const Case& k = GetParam();
  const int64_t n = 64, B = 24, G = 32, r0 = 5;
  const Dataset data = test::synthetic(k.task, n, k.layers.front(), k.layers.back());
  const ModelSpec spec = test::model(k.layers, k.task);
  const std::vector<float> init = init_params(spec, 7);
  const Sgd sgd{0.1f, 0.9f, 0.01f};

  CpuModel cpu(spec, data, B);
  CudaModel gpu(spec, 0, CudaModelSize{B, B, false}, false);
  cpu.set_params(init);
  gpu.set_params(init);
  const DeviceData dev(data, gpu.stream());
  DeviceBuffer<double> sum(1, gpu.stream());
  DeviceBuffer<unsigned long long> hits(1, gpu.stream());
  const int L = spec.num_layers();

  std::vector<int64_t> rows;
  for (int64_t i = 0; i < B; ++i) rows.push_back(r0 + i);
  const BatchView bv = cpu.load_batch(rows.data(), B);
  const DeviceBatch db = dev.rows(r0, data);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::vector<int> cpu_order, gpu_order;
    cpu.forward(bv.x, B);
    int64_t cpu_hits = 0;
    const double cpu_loss = cpu.loss(bv, B, G, true, &cpu_hits);  // per-row losses summed
    cpu.backward(bv.x, B, [&](int l) { cpu_order.push_back(l); });

    TB_CUDA_CHECK(cudaMemsetAsync(sum.get(), 0, sizeof(double), gpu.stream()));
    TB_CUDA_CHECK(cudaMemsetAsync(hits.get(), 0, sizeof(unsigned long long), gpu.stream()));
    gpu.forward(db.x, B);
    gpu.loss(db, B, G, gpu.delta(), sum.get(), hits.get());
    gpu.backward(db.x, B, [&](int l) { gpu_order.push_back(l); });
    TB_CUDA_CHECK(cudaStreamSynchronize(gpu.stream()));

    std::vector<int> last_first;
    for (int l = L - 1; l >= 0; --l) last_first.push_back(l);
    EXPECT_EQ(cpu_order, last_first);
    EXPECT_EQ(gpu_order, last_first);
    EXPECT_NEAR(device_double(sum.get()) / gpu.loss_per_row(), cpu_loss, 1e-5 * std::abs(cpu_loss));
    if (k.task == Task::kClassification) {
      EXPECT_EQ(static_cast<int64_t>(download(hits.get(), 1)[0]), cpu_hits);
    }
    EXPECT_LT(test::max_rel_err(download(gpu.grads(), gpu.layout().total), cpu.grads(), 1e-3), 1e-4);

    cpu.update(sgd);
    gpu.update(sgd);
    EXPECT_LT(test::max_rel_err(gpu.read_params(), cpu.params(), 1e-3), 1e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(Twins, CudaModelTwin,
                         ::testing::Values(Case{"mlp_regression", {12, 20, 9, 3}, Task::kRegression},
                                           Case{"mlp_classification", {12, 16, 5}, Task::kClassification},
                                           Case{"linear_regression", {12, 3}, Task::kRegression}),
                         [](const auto& info) { return std::string(info.param.name); });

// cuda-dp's slot 0 starts backward from the gathered dZ, not its own delta(): the same gradients.
TEST_F(CudaModelTest, BackwardFromAnExternalDzEqualsBackwardFromDelta) {
  const int64_t B = 16;
  const Dataset data = test::synthetic(Task::kClassification, B, 10, 4);
  const ModelSpec spec = test::model({10, 12, 8, 4}, Task::kClassification);
  CudaModel gpu(spec, 0, CudaModelSize{B, B, false}, false);
  gpu.set_params(init_params(spec, 3));
  const DeviceData dev(data, gpu.stream());
  const DeviceBatch db = dev.rows(0, data);
  DeviceBuffer<double> sum(1, gpu.stream());
  DeviceBuffer<float> dz(B * 4, gpu.stream());
  TB_CUDA_CHECK(cudaMemsetAsync(sum.get(), 0, sizeof(double), gpu.stream()));
  gpu.forward(db.x, B);
  gpu.loss(db, B, B, dz.get(), sum.get(), nullptr);
  gpu.backward(db.x, B, {}, dz.get());
  TB_CUDA_CHECK(cudaStreamSynchronize(gpu.stream()));
  const std::vector<float> from_dz = download(gpu.grads(), gpu.layout().total);
  gpu.loss(db, B, B, gpu.delta(), sum.get(), nullptr);
  gpu.backward(db.x, B);
  TB_CUDA_CHECK(cudaStreamSynchronize(gpu.stream()));
  EXPECT_EQ(download(gpu.grads(), gpu.layout().total), from_dz);
}

TEST_F(CudaModelTest, EvaluateRowsMatchesCpuModelOverRanges) {
  for (Task task : {Task::kRegression, Task::kClassification}) {
    const Dataset data = test::synthetic(task, 90, 8, 3);
    const ModelSpec spec = test::model({8, 10, 3}, task);
    const std::vector<float> p = init_params(spec, 5);
    CpuModel cpu(spec, data, 16);
    CudaModel gpu(spec, 0, CudaModelSize{std::min<int64_t>(kEvalChunk, data.n), 16, false}, false);
    cpu.set_params(p);
    gpu.set_params(p);
    const DeviceData dev(data, gpu.stream());
    double cpu_sum = 0;
    int64_t cpu_hits = 0;
    for (const Shard& r : {Shard{0, 10}, Shard{25, 90}}) {
      double l = 0;
      int64_t h = 0;
      cpu.evaluate_rows(r.begin, r.end, &l, &h);
      cpu_sum += l;
      cpu_hits += h;
    }
    double gpu_sum = 0;
    int64_t gpu_hits = 0;
    gpu.evaluate_rows(dev.rows(0, data), {Shard{0, 10}, Shard{25, 90}}, &gpu_sum, &gpu_hits);
    EXPECT_NEAR(gpu_sum / gpu.loss_per_row(), cpu_sum, 1e-5 * cpu_sum) << task_name(task);
    if (task == Task::kClassification) {
      EXPECT_EQ(gpu_hits, cpu_hits);
    }
  }
}

// --cuda-graph: captured once for the batch's address, replayed; the same parameters and
// losses as the eager step (which also leaves the parameters alone until its update).
TEST_F(CudaModelTest, GraphedStepsEqualEagerSteps) {
  const int64_t B = 20;
  const Dataset data = test::synthetic(Task::kRegression, B, 6, 2);
  const ModelSpec spec = test::model({6, 9, 2}, Task::kRegression);
  const Sgd sgd{0.05f, 0.5f, 0};
  CudaModel eager(spec, 0, CudaModelSize{B, B, false}, false), graphed(spec, 0, CudaModelSize{B, B, false}, false);
  eager.set_params(init_params(spec, 2));
  graphed.set_params(init_params(spec, 2));
  // Uploaded on eager's stream and synchronised; graphed's stream only reads them after.
  const DeviceData dev(data, eager.stream());
  const DeviceBatch db = dev.rows(0, data);
  DeviceBuffer<double> losses(6, eager.stream());
  DeviceBuffer<unsigned long long> next(1, graphed.stream());  // the graph's own slot counter
  TB_CUDA_CHECK(cudaMemsetAsync(losses.get(), 0, 3 * sizeof(double), eager.stream()));
  TB_CUDA_CHECK(cudaMemsetAsync(losses.get() + 3, 0, 3 * sizeof(double), graphed.stream()));
  TB_CUDA_CHECK(cudaMemsetAsync(next.get(), 0, sizeof(unsigned long long), graphed.stream()));
  for (int s = 0; s < 3; ++s) {
    eager.forward(db.x, B);
    eager.loss(db, B, B, eager.delta(), losses.get() + s, nullptr);
    eager.backward(db.x, B);
    eager.update(sgd);
    graphed.graphed_step(db, B, sgd, losses.get() + 3, next.get());  // the same pointers every replay
  }
  TB_CUDA_CHECK(cudaStreamSynchronize(eager.stream()));
  TB_CUDA_CHECK(cudaStreamSynchronize(graphed.stream()));
  const std::vector<double> l = download(losses.get(), 6);
  // Replay s wrote its own loss into slot s (the steps' losses differ: training moves on).
  for (int s = 0; s < 3; ++s) EXPECT_NEAR(l[3 + s], l[s], 1e-6 * std::abs(l[s])) << "step " << s;
  EXPECT_NE(l[0], l[2]);
  unsigned long long slots_used = 0;
  TB_CUDA_CHECK(cudaMemcpy(&slots_used, next.get(), sizeof slots_used, cudaMemcpyDeviceToHost));
  EXPECT_EQ(slots_used, 3u);
  EXPECT_LT(test::max_rel_err(graphed.read_params(), eager.read_params(), 1e-3), 1e-5);
}

// Linear regression within tb::cuda::linear_mse_step_applies takes the fused one-pass
// step; wider outputs or inputs, classification and MLPs do not. Its loss and gradients
// (rows [3, 3 + B) of a global batch of G) match CpuModel's fused step (the CPU twin) and
// the same CudaModel's forward + loss + backward: both fp32 in other orders, 1e-4
// relative (1e-3 floor) like the other twin tests, 1e-5 on the loss.
TEST_F(CudaModelTest, FusedLinearStepMatchesCpuModelAndTheUnfusedPath) {
  const int64_t n = 70, B = 50, G = 64, r0 = 3;
  for (const std::vector<int64_t>& layers : {std::vector<int64_t>{12, 1}, {33, 3}, {64, 16}, {2048, 1}}) {
    const std::string at = std::to_string(layers[0]) + "->" + std::to_string(layers[1]);
    const Dataset data = test::synthetic(Task::kRegression, n, layers[0], layers[1]);
    const ModelSpec spec = test::model(layers, Task::kRegression);
    CpuModel cpu(spec, data, B);
    CudaModel gpu(spec, 0, CudaModelSize{B, B, false}, false);
    ASSERT_TRUE(cpu.has_fused_step()) << at;
    ASSERT_TRUE(gpu.has_fused_step()) << at;
    const std::vector<float> init = init_params(spec, 11);
    cpu.set_params(init);
    gpu.set_params(init);
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < B; ++i) rows.push_back(r0 + i);
    const BatchView bv = cpu.load_batch(rows.data(), B);
    const double cpu_loss = cpu.fused_step(bv, B, G);  // per-row losses (MSE over outputs) summed

    const DeviceData dev(data, gpu.stream());
    const DeviceBatch db = dev.rows(r0, data);
    DeviceBuffer<double> sum(std::vector<double>{0.0, 0.0}, gpu.stream());
    gpu.fused_step(db, B, G, sum.get());
    TB_CUDA_CHECK(cudaStreamSynchronize(gpu.stream()));
    const std::vector<float> fused = download(gpu.grads(), gpu.layout().total);
    EXPECT_NEAR(device_double(sum.get()) / gpu.loss_per_row(), cpu_loss, 1e-5 * cpu_loss) << at;
    EXPECT_LT(test::max_rel_err(fused, cpu.grads(), 1e-3), 1e-4) << at;

    gpu.forward(db.x, B);
    gpu.loss(db, B, G, gpu.delta(), sum.get() + 1, nullptr);
    gpu.backward(db.x, B);
    TB_CUDA_CHECK(cudaStreamSynchronize(gpu.stream()));
    EXPECT_LT(test::max_rel_err(download(gpu.grads(), gpu.layout().total), fused, 1e-3), 1e-4) << at;
    EXPECT_NEAR(download(sum.get(), 2)[1], device_double(sum.get()), 1e-5 * device_double(sum.get())) << at;
  }
  for (const auto& [layers, task] : {std::pair<std::vector<int64_t>, Task>{{64, 17}, Task::kRegression},
                                     {{2049, 1}, Task::kRegression},
                                     {{513, 16}, Task::kRegression},
                                     {{12, 3}, Task::kClassification},
                                     {{12, 8, 1}, Task::kRegression}}) {
    CudaModel gpu(test::model(layers, task), 0, CudaModelSize{8, 8, false}, false);
    EXPECT_FALSE(gpu.has_fused_step()) << layers[0] << "->" << layers.back();
  }
}

// --cuda-graph of a linear regression model captures the fused step: the same
// parameters and losses as eager fused steps.
TEST_F(CudaModelTest, GraphedFusedStepsEqualEagerFusedSteps) {
  const int64_t B = 40;
  const Dataset data = test::synthetic(Task::kRegression, B, 20, 2);
  const ModelSpec spec = test::model({20, 2}, Task::kRegression);
  const Sgd sgd{0.05f, 0.5f, 0};
  CudaModel eager(spec, 0, CudaModelSize{B, B, false}, false), graphed(spec, 0, CudaModelSize{B, B, false}, false);
  ASSERT_TRUE(graphed.has_fused_step());
  eager.set_params(init_params(spec, 4));
  graphed.set_params(init_params(spec, 4));
  const DeviceData dev(data, eager.stream());
  const DeviceBatch db = dev.rows(0, data);
  DeviceBuffer<double> losses(std::vector<double>(6, 0.0), eager.stream());
  DeviceBuffer<unsigned long long> next(std::vector<unsigned long long>(1, 0), graphed.stream());
  for (int s = 0; s < 3; ++s) {
    eager.fused_step(db, B, B, losses.get() + s);
    eager.update(sgd);
    graphed.graphed_step(db, B, sgd, losses.get() + 3, next.get());  // the graph takes slot 3 + s itself
  }
  TB_CUDA_CHECK(cudaStreamSynchronize(eager.stream()));
  TB_CUDA_CHECK(cudaStreamSynchronize(graphed.stream()));
  const std::vector<double> l = download(losses.get(), 6);
  for (int s = 0; s < 3; ++s) EXPECT_EQ(l[3 + s], l[s]) << "step " << s;  // same kernels, same order
  EXPECT_EQ(graphed.read_params(), eager.read_params());
}

// A cuda-dp replica is never updated and never takes a loss: no velocity, no sums.
TEST_F(CudaModelTest, AReplicaHoldsNoOptimizerState) {
  const ModelSpec spec = test::model({32, 64, 10}, Task::kClassification);
  const CudaModelSize master{128, 64, false}, replica{64, 64, true};
  const int64_t P = make_layout(spec).total;
  EXPECT_EQ(CudaModel::device_bytes(spec, master) - CudaModel::device_bytes(spec, replica),
            P * 4 + 64 * 74 * 4);  // velocity, and 64 more activation rows (64 + 10 wide)
  CudaModel a(spec, 0, master, false), b(spec, 0, replica, false);
  EXPECT_GE(a.arena().held_bytes(), CudaModel::device_bytes(spec, master));
  EXPECT_EQ(b.arena().held_bytes(), CudaModel::device_bytes(spec, replica));
}

}  // namespace
}  // namespace tb
