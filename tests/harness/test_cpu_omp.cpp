// tests/harness/test_cpu_omp.cpp — cpu-omp (float32, OpenMP) learns what the
// float64 reference learns: same parameters after k epochs over several shapes,
// batch sizes that do not divide the data, shuffling, momentum/weight decay, and
// 1 or 2 threads. Also: the MLP really learns the synthetic classes.
#include <gtest/gtest.h>

#include "datasets/shuffle.h"
#include "harness/backend.h"
#include "test_helpers.h"

namespace tb {
namespace {

using test::max_rel_err;
using test::model;
using test::synthetic;

struct Trained {
  std::vector<float> params;
  EvalResult eval;
  std::vector<double> epoch_loss;
};

Trained train(const std::string& backend, const Dataset& data, const RunConfig& opt, int epochs, bool shuffle) {
  std::unique_ptr<Trainer> t = find_backend(backend)->make_trainer(data, opt);
  t->set_params(init_params(opt.model, 9));
  Trained out;
  std::vector<int64_t> order;
  for (int e = 0; e < epochs; ++e) {
    epoch_order(4, e, data.n, shuffle, &order);
    EpochPlan plan{&order, opt.batch, (data.n + opt.batch - 1) / opt.batch, data.n};
    const EpochResult r = t->train_epoch(plan, nullptr);
    EXPECT_EQ(r.nonfinite_step, -1);
    out.epoch_loss.push_back(r.mean_loss);
  }
  out.params = t->params();
  out.eval = t->evaluate();
  return out;
}

using test::Case;  // tests/harness/test_helpers.h

class CpuOmpMatchesReference : public ::testing::TestWithParam<Case> {};

TEST_P(CpuOmpMatchesReference, AfterThreeEpochs) {
  const Case& c = GetParam();
  const Dataset data = synthetic(c.task, c.n, c.layers.front(), c.layers.back());
  RunConfig opt;
  opt.model = model(c.layers, c.task);
  opt.batch = c.batch;
  opt.lr = c.task == Task::kRegression ? 0.05 : 0.2;
  opt.momentum = c.momentum;
  opt.weight_decay = c.weight_decay;
  opt.threads = c.threads;
  const Trained ref = train("reference", data, opt, 3, c.shuffle);
  const Trained omp = train("cpu-omp", data, opt, 3, c.shuffle);
  // float32 accumulation over <= a few hundred terms per GEMM entry and ~60 steps:
  // parameters agree to ~1e-5 relative; 2e-4 (with a 1e-2 absolute floor for
  // near-zero values) leaves margin yet catches any wrong index or scale.
  EXPECT_LT(max_rel_err(omp.params, ref.params, 1e-2), 2e-4);
  EXPECT_NEAR(omp.eval.loss, ref.eval.loss, 1e-4 * std::max(1.0, ref.eval.loss));
  if (c.task == Task::kClassification) {
    EXPECT_NEAR(omp.eval.accuracy, ref.eval.accuracy, 2.0 / c.n);
  }
  for (size_t e = 0; e < ref.epoch_loss.size(); ++e) {
    EXPECT_NEAR(omp.epoch_loss[e], ref.epoch_loss[e], 1e-4 * std::max(1.0, ref.epoch_loss[e]));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuOmpMatchesReference,
    ::testing::Values(Case{{7, 1}, Task::kRegression, 203, 32, 1, false, 0, 0},
                      Case{{7, 1}, Task::kRegression, 203, 32, 2, true, 0, 0},
                      Case{{13, 3}, Task::kRegression, 150, 17, 2, false, 0.9, 1e-3},
                      // two rows sharing a vector of outputs (37 = 2 x 16 + 5), then four vectors
                      // (6-row blocks) in the one-pass step; batch x D above its parallel threshold
                      Case{{64, 37}, Task::kRegression, 1200, 600, 2, true, 0, 0},
                      Case{{64, 60}, Task::kRegression, 1100, 550, 2, true, 0.9, 0},
                      // four vectors and a shared one (4-row blocks); five and a shared one, above
                      // the parallel threshold
                      Case{{40, 70}, Task::kRegression, 203, 100, 2, true, 0.9, 1e-3},
                      Case{{64, 85}, Task::kRegression, 1100, 550, 2, true, 0.9, 1e-3},
                      // wider than the one-pass step: the blocked one (96-row blocks)
                      Case{{30, 130}, Task::kRegression, 150, 150, 1, false, 0, 0},
                      Case{{9, 11, 5}, Task::kClassification, 211, 25, 1, true, 0, 0},
                      Case{{9, 11, 5}, Task::kClassification, 211, 25, 2, false, 0.5, 1e-2},
                      Case{{10, 33, 17, 3}, Task::kRegression, 130, 64, 2, true, 0.9, 0},
                      Case{{20, 37, 19, 4}, Task::kClassification, 257, 50, 2, true, 0.9, 1e-4}),
    [](const ::testing::TestParamInfo<Case>& info) {
      // e.g. mlp_20x37x19x4_cls_n257_b50_t2_shuffle_mom
      const Case& c = info.param;
      std::string s = c.layers.size() == 2 ? "linear_" : "mlp_";
      for (size_t i = 0; i < c.layers.size(); ++i) {
        if (i) s += 'x';
        s += std::to_string(c.layers[i]);
      }
      s += c.task == Task::kRegression ? "_reg" : "_cls";
      s += "_n" + std::to_string(c.n) + "_b" + std::to_string(c.batch) + "_t" + std::to_string(c.threads);
      if (c.shuffle) s += "_shuffle";
      if (c.momentum != 0) s += "_mom";
      if (c.weight_decay != 0) s += "_wd";
      return s;
    });

TEST(CpuOmp, MlpLearnsSyntheticClassesFarAboveChance) {
  // 4 classes: chance is 0.25. A 20-64-4 MLP with a few epochs of SGD must exceed 0.8.
  const Dataset data = synthetic(Task::kClassification, 4000, 20, 4, 21);
  RunConfig opt;
  opt.model = model({20, 64, 4}, Task::kClassification);
  opt.batch = 64;
  opt.lr = 0.5;
  opt.threads = 2;
  const Trained t = train("cpu-omp", data, opt, 8, true);
  EXPECT_GT(t.eval.accuracy, 0.8);
  EXPECT_LT(t.epoch_loss.back(), t.epoch_loss.front());
}

TEST(CpuOmp, ThreadCountDoesNotChangeTheResultBeyondRounding) {
  const Dataset data = synthetic(Task::kRegression, 300, 16, 2);
  RunConfig opt;
  opt.model = model({16, 24, 2}, Task::kRegression);
  opt.batch = 40;
  opt.lr = 0.05;
  opt.threads = 1;
  const Trained one = train("cpu-omp", data, opt, 2, false);
  opt.threads = 2;
  const Trained two = train("cpu-omp", data, opt, 2, false);
  EXPECT_LT(max_rel_err(two.params, one.params, 1e-2), 1e-5);
}

}  // namespace
}  // namespace tb
