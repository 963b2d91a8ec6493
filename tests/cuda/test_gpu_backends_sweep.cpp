// tests/cuda/test_gpu_backends_sweep.cpp — `cuda` and `cuda-dp` against `reference`
// over a fixed pseudo-random sweep of small configurations, for the edge cases the
// hand-picked tests do not name: widths and batches of 1, a batch larger than the data
// set, a last batch of one row, fewer rows than replicas, outputs of 1, momentum and
// weight decay on and off, every placement with and without CUDA graphs, slot lists
// that share GPUs. Tolerances: tests/cuda/gpu_train.h (the cpu-omp ones), widened per
// case to 10x cpu-omp's own distance from reference where that is larger. Skipped,
// with the reason, where no GPU is usable (run on fake GPUs as fake_gpu.*).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/host_info.h"
#include "tests/cuda/gpu_gate.h"
#include "tests/cuda/gpu_train.h"
#include "tests/harness/test_helpers.h"

namespace tb {
namespace {

struct Case {
  Task task;
  std::vector<int64_t> layers;
  int64_t n, batch;
  bool shuffle;
  double momentum, weight_decay;
  std::string text;
};

// Case k of the sweep: the same for every run (a fixed seed), small enough for a CPU.
Case make_case(int k) {
  std::mt19937 rng(20261122u + static_cast<uint32_t>(k));
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Case c;
  c.task = pick(0, 1) ? Task::kClassification : Task::kRegression;
  c.layers.push_back(pick(1, 24));
  for (int h = pick(0, 2); h > 0; --h) c.layers.push_back(pick(1, 33));
  c.layers.push_back(c.task == Task::kClassification ? pick(2, 6) : pick(1, 4));
  c.n = pick(1, 150);
  // A batch of 1, one larger than the data set, one leaving a single-row last batch, or any.
  switch (pick(0, 3)) {
    case 0: c.batch = 1; break;
    case 1: c.batch = c.n + pick(1, 9); break;
    case 2: c.batch = c.n > 1 ? c.n - 1 : 1; break;
    default: c.batch = pick(1, 64); break;
  }
  c.shuffle = pick(0, 1) != 0;
  c.momentum = pick(0, 1) ? 0.9 : 0.0;
  c.weight_decay = pick(0, 1) ? 1e-3 : 0.0;
  std::ostringstream t;
  t << "case " << k << ": " << (c.task == Task::kClassification ? "classification" : "regression") << " layers";
  for (int64_t w : c.layers) t << " " << w;
  t << ", n " << c.n << ", batch " << c.batch << (c.shuffle ? ", shuffled" : "") << ", momentum " << c.momentum
    << ", weight decay " << c.weight_decay;
  c.text = t.str();
  return c;
}

TEST(GpuBackendsSweep, CudaAndCudaDpMatchReferenceOnEveryCase) {
  TB_GPU_TEST_GATE();
  const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
  const int gpus = static_cast<int>(g.gpus.size());
  constexpr int kCases = 64, kEpochs = 3;
  for (int k = 0; k < kCases; ++k) {
    const Case c = make_case(k);
    SCOPED_TRACE(c.text);
    const Dataset data = test::synthetic(c.task, c.n, c.layers.front(), c.layers.back(), 11 + k);
    RunConfig opt;
    opt.model = test::model(c.layers, c.task);
    opt.batch = c.batch;
    opt.lr = c.task == Task::kRegression ? 0.05 : 0.1;
    opt.momentum = c.momentum;
    opt.weight_decay = c.weight_decay;
    const test::Trained ref = test::train("reference", data, opt, kEpochs, c.shuffle);
    // How far this case's own float32 rounding carries cpu-omp from reference: a case of
    // many small steps with momentum amplifies last-bit differences ~1000x (1e-4 where
    // most cases stay near 1e-6). A GPU backend may drift 10x as far (other rounding
    // points), never less than the usual 2e-4; a wrong buffer or shape is ~1e-2 off.
    const double omp_err = test::max_rel_err(test::train("cpu-omp", data, opt, kEpochs, c.shuffle).params,
                                             ref.params, 1e-2);
    const double tol = std::max(2e-4, 10 * omp_err);
    for (int variant = 0; variant < 4; ++variant) {  // device/host placement x graph or not
      RunConfig o = opt;
      o.data_placement = (variant < 2) ? "device" : "host";
      o.cuda_graph = variant % 2 == 1;
      test::expect_close(test::train("cuda", data, o, kEpochs, c.shuffle), ref, data,
                         std::string("cuda, ") + (o.data_on_device() ? "device" : "host") +
                             (o.cuda_graph ? ", graph" : ""),
                         tol);
    }
    // Three replicas: on GPUs 0, 1, 0 where there are two, else all on GPU 0.
    RunConfig dp = opt;
    dp.dp_devices = gpus >= 2 ? std::vector<int>{0, 1, 0} : std::vector<int>{0, 0, 0};
    dp.dp_mode = (k % 2 == 1) ? "persistent" : "faithful";
    test::expect_close(test::train("cuda-dp", data, dp, kEpochs, c.shuffle), ref, data,
                       std::string("cuda-dp ") + (dp.dp_persistent() ? "persistent" : "faithful"), tol);
  }
}

}  // namespace
}  // namespace tb
