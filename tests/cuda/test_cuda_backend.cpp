// tests/cuda/test_cuda_backend.cpp — the `cuda` backend against the float64
// reference on a real GPU: both models, device and host data placement, shuffled
// and not, momentum, a short last batch, CUDA graphs (same parameters as without),
// TF32 (looser), an impossible size as a clean failure. Skipped, with the reason,
// where no CUDA device is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "datasets/shuffle.h"
#include "harness/backend.h"
#include "harness/host_info.h"
#include "tests/harness/test_helpers.h"

namespace tb {
namespace {

class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
    if (!g.usable) GTEST_SKIP() << "no usable GPU: " << g.reason;
  }
};

Dataset make_data(Task task, int64_t n, int64_t d, int64_t o) { return test::synthetic(task, n, d, o, 5); }

struct Trained {
  std::vector<float> params;
  EvalResult eval;
};

Trained train(const std::string& backend, const Dataset& data, const TrainOptions& opt, int epochs, bool shuffle) {
  std::unique_ptr<Trainer> t = find_backend(backend)->make_trainer(data, opt);
  t->set_params(init_params(opt.model, 3));
  std::vector<int64_t> order;
  for (int e = 0; e < epochs; ++e) {
    epoch_order(2, e, data.n, shuffle, &order);
    const EpochPlan plan{&order, opt.batch, (data.n + opt.batch - 1) / opt.batch, data.n};
    EXPECT_EQ(t->train_epoch(plan, nullptr).nonfinite_step, -1);
  }
  return {t->params(), t->evaluate()};
}

// Relative difference with a 1e-2 absolute floor for parameters near zero.
double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    m = std::max(m, std::abs(double(a[i]) - b[i]) / (std::abs(double(b[i])) + 1e-2));
  }
  return m;
}

TrainOptions options(std::vector<int64_t> layers, Task task, int64_t batch) {
  TrainOptions o;
  o.model.kind = layers.size() == 2 ? ModelKind::kLinear : ModelKind::kMlp;
  o.model.layers = std::move(layers);
  o.model.task = task;
  o.batch = batch;
  o.lr = task == Task::kRegression ? 0.05 : 0.2;
  o.momentum = 0.9;
  return o;
}

TEST_F(CudaBackend, MatchesReferenceForBothPlacementsShuffledOrNot) {
  for (Task task : {Task::kRegression, Task::kClassification}) {
    const std::vector<int64_t> layers = {24, 40, 17, task == Task::kRegression ? 3 : 5};
    const Dataset data = make_data(task, 1003, 24, layers.back());
    TrainOptions opt = options(layers, task, 64);  // 1003 = 15 x 64 + 43: a short last batch
    for (bool shuffle : {false, true}) {
      const Trained ref = train("reference", data, opt, 3, shuffle);
      for (bool on_device : {true, false}) {
        opt.data_on_device = on_device;
        const Trained gpu = train("cuda", data, opt, 3, shuffle);
        // fp32 GEMMs (TF32 off) in another summation order: ~1e-5 relative.
        EXPECT_LT(max_rel(gpu.params, ref.params), 2e-4) << "device " << on_device << " shuffle " << shuffle;
        EXPECT_NEAR(gpu.eval.loss, ref.eval.loss, 1e-4 * std::max(1.0, ref.eval.loss));
        if (task == Task::kClassification) {
          EXPECT_NEAR(gpu.eval.accuracy, ref.eval.accuracy, 2.0 / data.n);
        }
      }
    }
  }
}

TEST_F(CudaBackend, CudaGraphGivesTheSameParametersAsWithout) {
  const Dataset data = make_data(Task::kClassification, 1003, 24, 5);
  TrainOptions opt = options({24, 40, 5}, Task::kClassification, 64);
  for (bool on_device : {true, false}) {
    opt.data_on_device = on_device;
    opt.cuda_graph = false;
    const Trained plain = train("cuda", data, opt, 2, true);
    opt.cuda_graph = true;
    const Trained graphed = train("cuda", data, opt, 2, true);
    EXPECT_EQ(graphed.params, plain.params) << "device " << on_device;  // same kernels, same order: bitwise
  }
}

TEST_F(CudaBackend, Tf32StaysCloseToReference) {
  const Dataset data = make_data(Task::kRegression, 512, 64, 2);
  TrainOptions opt = options({64, 128, 2}, Task::kRegression, 128);
  opt.precision = "tf32";
  const Trained ref = train("reference", data, opt, 2, false);
  const Trained gpu = train("cuda", data, opt, 2, false);
  EXPECT_LT(max_rel(gpu.params, ref.params), 2e-2);  // TF32 keeps a 10-bit mantissa
  EXPECT_EQ(find_backend("cuda")->make_trainer(data, opt)->precision(), "tf32");
}

TEST_F(CudaBackend, AnImpossibleSizeFailsWithTheMemoryNumbers) {
  const Dataset data = make_data(Task::kRegression, 64, 8, 1);
  const TrainOptions opt = options({8, 1 << 20, 1 << 18, 1}, Task::kRegression, 64);  // ~1 TiB of weights
  try {
    find_backend("cuda")->make_trainer(data, opt);
    FAIL() << "expected an out-of-memory error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("out of device memory (needs ~"), std::string::npos) << e.what();
  }
}

TEST_F(CudaBackend, AnInvalidDeviceIsRefused) {
  const Dataset data = make_data(Task::kRegression, 64, 8, 1);
  TrainOptions opt = options({8, 1}, Task::kRegression, 16);
  opt.device = 1000;
  EXPECT_THROW(find_backend("cuda")->make_trainer(data, opt), std::exception);
}

}  // namespace
}  // namespace tb
