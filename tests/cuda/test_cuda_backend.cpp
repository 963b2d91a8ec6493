// tests/cuda/test_cuda_backend.cpp — the `cuda` backend against the float64
// reference on a real GPU: both models, device and host data placement, shuffled
// and not, momentum, a short last batch, CUDA graphs (same parameters as without),
// linear regression through the fused one-pass step and through the GEMM path,
// TF32 (looser), memory and phases reported, an impossible size as a clean failure (also
// in a suite, which goes on). Skipped, with the reason,
// where no CUDA device is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "datasets/shuffle.h"
#include "harness/backend.h"
#include "harness/host_info.h"
#include "tests/cuda/gpu_gate.h"
#include "tests/cuda/gpu_train.h"
#include "tests/harness/test_helpers.h"
#include "tests/shell.h"

namespace tb {
namespace {

class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    TB_GPU_TEST_GATE();
  }
};

Dataset make_data(Task task, int64_t n, int64_t d, int64_t o) { return test::synthetic(task, n, d, o, 5); }

using test::train;
using test::Trained;

// Relative difference with a 1e-2 absolute floor for parameters near zero.
double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    m = std::max(m, std::abs(double(a[i]) - b[i]) / (std::abs(double(b[i])) + 1e-2));
  }
  return m;
}

RunConfig options(std::vector<int64_t> layers, Task task, int64_t batch) {
  RunConfig o;
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
    RunConfig opt = options(layers, task, 64);  // 1003 = 15 x 64 + 43: a short last batch
    for (bool shuffle : {false, true}) {
      const Trained ref = train("reference", data, opt, 3, shuffle);
      std::vector<float> resident;  // the device-placement parameters, for the host run
      for (bool on_device : {true, false}) {
        opt.data_placement = (on_device) ? "device" : "host";
        const Trained gpu = train("cuda", data, opt, 3, shuffle);
        // Host placement stages the same rows into equally aligned buffers for the same
        // kernels: at most last-bit differences from device placement, far inside the
        // reference tolerance (a wrong staged batch is ~1e-2 off).
        if (on_device) resident = gpu.params;
        else EXPECT_LT(max_rel(gpu.params, resident), 1e-6) << "host vs device placement, shuffle " << shuffle;
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

// Linear regression: within the fused step's range (one output, three, 64 -> 16) the
// cuda backend takes the one-pass step (kernels/cuda/linear_step.h); 64 -> 17 keeps the
// GEMM path. Every case against reference at the usual tolerance, device and host
// placement, shuffled, 1003 rows in batches of 64 (a short last batch, momentum), and
// with --cuda-graph (the graph captures the same kernels: bitwise the eager result).
TEST_F(CudaBackend, LinearRegressionMatchesReferenceFusedOrNot) {
  for (const std::vector<int64_t>& layers :
       {std::vector<int64_t>{24, 1}, {37, 3}, {64, 16}, {64, 17}}) {
    const Dataset data = make_data(Task::kRegression, 1003, layers[0], layers[1]);
    RunConfig opt = options(layers, Task::kRegression, 64);
    const Trained ref = train("reference", data, opt, 3, true);
    for (bool on_device : {true, false}) {
      opt.data_placement = on_device ? "device" : "host";
      opt.cuda_graph = false;
      const Trained gpu = train("cuda", data, opt, 3, true);
      const std::string at = std::to_string(layers[0]) + "->" + std::to_string(layers[1]) + " device " +
                             std::to_string(on_device);
      EXPECT_LT(max_rel(gpu.params, ref.params), 2e-4) << at;
      EXPECT_NEAR(gpu.eval.loss, ref.eval.loss, 1e-4 * std::max(1.0, ref.eval.loss)) << at;
      opt.cuda_graph = true;
      const Trained graphed = train("cuda", data, opt, 3, true);
      EXPECT_EQ(graphed.params, gpu.params) << at << " graphed";
    }
  }
}

// An epoch of more steps than the phase-event pool holds (phase_sample.h: 128 timed
// steps) leaves most steps untimed: the fused linear step must not record an event of
// an untimed step (it once did, and crashed on 251 steps per epoch).
TEST_F(CudaBackend, FusedStepsBeyondThePhaseEventPoolMatchReference) {
  const std::vector<int64_t> layers{24, 1};
  const Dataset data = make_data(Task::kRegression, 1003, layers[0], layers[1]);
  RunConfig opt = options(layers, Task::kRegression, 4);  // 251 steps per epoch
  const Trained ref = train("reference", data, opt, 1, true);
  opt.cuda_graph = false;
  const Trained gpu = train("cuda", data, opt, 1, true);
  EXPECT_LT(max_rel(gpu.params, ref.params), 2e-4);
  EXPECT_NEAR(gpu.eval.loss, ref.eval.loss, 1e-4 * std::max(1.0, ref.eval.loss));
}

TEST_F(CudaBackend, CudaGraphGivesTheSameParametersAsWithout) {
  const Dataset data = make_data(Task::kClassification, 1003, 24, 5);
  RunConfig opt = options({24, 40, 5}, Task::kClassification, 64);
  for (bool on_device : {true, false}) {
    for (bool shuffle : {true, false}) {  // unshuffled resident data: one graph per step, read in place
      opt.data_placement = (on_device) ? "device" : "host";
      opt.cuda_graph = false;
      const Trained plain = train("cuda", data, opt, 2, shuffle);
      opt.cuda_graph = true;
      const Trained graphed = train("cuda", data, opt, 2, shuffle);
      // Same kernels, same order, equally aligned inputs: bitwise. The losses too, which
      // the graph writes into each step's slot itself.
      EXPECT_EQ(graphed.params, plain.params) << "device " << on_device << " shuffle " << shuffle;
      EXPECT_EQ(graphed.epoch_losses, plain.epoch_losses) << "device " << on_device << " shuffle " << shuffle;
    }
  }
}

TEST_F(CudaBackend, Tf32StaysCloseToReference) {
  const Dataset data = make_data(Task::kRegression, 512, 64, 2);
  RunConfig opt = options({64, 128, 2}, Task::kRegression, 128);
  opt.precision = "tf32";
  const Trained ref = train("reference", data, opt, 2, false);
  const Trained gpu = train("cuda", data, opt, 2, false);
  EXPECT_LT(max_rel(gpu.params, ref.params), 2e-2);  // TF32 keeps a 10-bit mantissa
  EXPECT_EQ(find_backend("cuda")->make_trainer(data, opt)->precision(), "tf32");
}

TEST_F(CudaBackend, AnImpossibleSizeFailsWithTheMemoryNumbers) {
  const Dataset data = make_data(Task::kRegression, 64, 8, 1);
  const RunConfig opt = options({8, 1 << 20, 1 << 18, 1}, Task::kRegression, 64);  // ~1 TiB of weights
  try {
    find_backend("cuda")->make_trainer(data, opt);
    FAIL() << "expected an out-of-memory error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("out of device memory (needs ~"), std::string::npos) << e.what();
  }
}

TEST_F(CudaBackend, ReportsItsDeviceMemoryAndEveryPhase) {
  const Dataset data = make_data(Task::kRegression, 512, 16, 2);
  RunConfig opt = options({16, 32, 2}, Task::kRegression, 64);
  for (bool on_device : {true, false}) {
    opt.data_placement = (on_device) ? "device" : "host";
    std::unique_ptr<Trainer> t = find_backend("cuda")->make_trainer(data, opt);
    // At least parameters, gradients and velocity (3 x P floats) and the cuBLAS workspace.
    const int64_t params = 16 * 32 + 32 + 32 * 2 + 2;
    EXPECT_GT(t->peak_device_mem_bytes(), 3 * params * 4 + (int64_t{32} << 20)) << "device " << on_device;
    t->set_params(init_params(opt.model, 3));
    std::vector<int64_t> order;
    epoch_order(2, 0, data.n, true, &order);
    t->train_epoch({&order, opt.batch, 8, data.n}, nullptr);
    const PhaseTimes p = t->take_phase_times();
    EXPECT_GT(p.transfer_s, 0) << "device " << on_device;  // upload, gathers or staged copies
    EXPECT_GT(p.forward_s, 0);
    EXPECT_GT(p.backward_s, 0);
    EXPECT_GT(p.optimizer_s, 0);
  }
}

// The upload before the timed epochs: the dataset's bytes (X and the targets) with
// device placement, nothing with host placement (batches are streamed inside the steps).
TEST_F(CudaBackend, PrepareRepetitionUploadsTheDatasetOnlyWithDevicePlacement) {
  const Dataset data = make_data(Task::kRegression, 300, 16, 2);
  RunConfig opt = options({16, 32, 2}, Task::kRegression, 64);
  for (bool on_device : {true, false}) {
    opt.data_placement = on_device ? "device" : "host";
    std::unique_ptr<Trainer> t = find_backend("cuda")->make_trainer(data, opt);
    t->set_params(init_params(opt.model, 3));
    const UploadFigures up = t->prepare_repetition();
    EXPECT_EQ(up.bytes, on_device ? 300 * (16 + 2) * 4 : 0) << "device " << on_device;
    EXPECT_EQ(up.seconds > 0, on_device) << "device " << on_device;
    EXPECT_EQ(t->prepare_repetition().bytes, 0) << "once per set_params";
  }
}

// A configuration that cannot fit is a failed row with the numbers; the suite goes on
// to the next one (and exits 1, as after any failed row).
TEST_F(CudaBackend, ASuiteGoesOnAfterAnOutOfMemoryRow) {
  const std::string dir = std::string(TB_TEST_TMPDIR) + "/cuda-oom-suite";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir + "/oom.suite");
    // too-big: 3 x 2^34 weights (parameters, gradients, velocity) is ~200 GiB.
    f << "defaults: --epochs 1 --warmup 0 --reps 1 --seed 1\n"
         "too-big: --model mlp --layers 8,131072,131072,1 --dataset synthetic-regression --samples 64 --batch 64 "
         "--lr 0.01 --backends cuda\n"
         "fits: --model mlp --layers 8,16,1 --dataset synthetic-regression --samples 64 --batch 16 --lr 0.01 "
         "--backends cuda\n";
  }
  const test::ShellResult r =
      test::shell(std::string(TB_TRAINBENCH_EXE) + " suite " + dir + "/oom.suite --out " + dir + "/out 2>&1");
  EXPECT_EQ(r.code, 1) << r.out;
  std::ifstream csv(dir + "/out/results.csv");
  std::string header, line, too_big, fits;
  std::getline(csv, header);
  while (std::getline(csv, line)) {
    if (line.find("too-big") != std::string::npos) too_big = line;
    if (line.find("fits") != std::string::npos) fits = line;
  }
  // The suite checks host memory first, as run does (the parameters start on the host):
  // on a host with less than ~200 GiB that check fails the row, else the device's does.
  EXPECT_TRUE(too_big.find("failed: out of device memory (needs ~") != std::string::npos ||
              too_big.find("failed: out of host memory (needs ~") != std::string::npos)
      << too_big;
  EXPECT_TRUE(fits.size() > 3 && fits.substr(fits.size() - 3) == ",ok") << fits;
}

TEST_F(CudaBackend, AnInvalidDeviceIsRefused) {
  const Dataset data = make_data(Task::kRegression, 64, 8, 1);
  RunConfig opt = options({8, 1}, Task::kRegression, 16);
  opt.device = 1000;
  EXPECT_THROW(find_backend("cuda")->make_trainer(data, opt), std::exception);
}

}  // namespace
}  // namespace tb
