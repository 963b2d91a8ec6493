// tests/cuda/gpu_train.h — what the GPU tests share: train a backend in-process from
// the seed's initial parameters over E epochs (shuffled or not), and compare a result
// with reference's at the cpu-omp tolerances.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "datasets/shuffle.h"
#include "harness/backend.h"
#include "tests/harness/test_helpers.h"

namespace tb::test {

struct Trained {
  std::vector<float> params;
  EvalResult eval;
  PhaseTimes phases;
  std::vector<double> epoch_losses;  // each epoch's mean step loss (EpochResult)
};

inline Trained train(const std::string& backend, const Dataset& data, const RunConfig& opt, int epochs,
                     bool shuffle) {
  std::unique_ptr<Trainer> t = find_backend(backend)->make_trainer(data, opt);
  t->set_params(init_params(opt.model, 3));
  t->take_phase_times();
  std::vector<int64_t> order;
  Trained out;
  for (int e = 0; e < epochs; ++e) {
    epoch_order(2, e, data.n, shuffle, &order);
    const EpochPlan plan{&order, opt.batch, (data.n + opt.batch - 1) / opt.batch, data.n};
    const EpochResult r = t->train_epoch(plan, nullptr);
    EXPECT_EQ(r.nonfinite_step, -1) << backend;
    out.epoch_losses.push_back(r.mean_loss);
  }
  out.phases = t->take_phase_times();
  out.params = t->params();
  out.eval = t->evaluate();
  return out;
}

// fp32 GEMMs (TF32 off) in another summation order than reference's float64 loops:
// ~1e-5 relative; 2e-4 on parameters (1e-2 absolute floor; `param_tol` for cases where
// many steps amplify rounding), 1e-4 on the loss, and accuracy within two rows.
inline void expect_close(const Trained& got, const Trained& want, const Dataset& data, const std::string& what,
                         double param_tol = 2e-4) {
  EXPECT_LT(max_rel_err(got.params, want.params, 1e-2), param_tol) << what;
  EXPECT_NEAR(got.eval.loss, want.eval.loss, 1e-4 * std::max(1.0, want.eval.loss)) << what;
  if (data.task == Task::kClassification) {
    EXPECT_NEAR(got.eval.accuracy, want.eval.accuracy, 2.0 / static_cast<double>(data.n)) << what;
  }
}

}  // namespace tb::test
