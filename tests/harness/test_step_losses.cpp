// tests/harness/test_step_losses.cpp — the GPU trainers' epoch result from per-step
// loss sums (harness/backends/step_losses.h), against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "harness/backends/step_losses.h"

namespace tb {
namespace {

TEST(StepLosses, MeanOfPerRowLossesWithAShortLastStepAndOneProgressCall) {
  // 10 rows, batch 4: steps of 4, 4 and 2 rows; per-element MSE sums over O = 2 outputs.
  const std::vector<int64_t> order(10);
  EpochPlan plan{&order, 4, 3, 10};
  const double sums[] = {8.0, 16.0, 2.0};  // per-row losses 1, 2, 0.5
  int calls = 0;
  int64_t last_step = -1;
  double reported = 0;
  const EpochResult r = epoch_result_from_sums(sums, plan, 2.0, [&](int64_t s, double l) {
    ++calls;
    last_step = s;
    reported = l;
  });
  EXPECT_EQ(r.steps, 3);
  EXPECT_EQ(r.nonfinite_step, -1);
  EXPECT_DOUBLE_EQ(r.mean_loss, 3.5 / 3);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(last_step, 2);
  EXPECT_DOUBLE_EQ(reported, 3.5 / 3);
}

TEST(StepLosses, StopsAtTheFirstNonFiniteStep) {
  const std::vector<int64_t> order(12);
  EpochPlan plan{&order, 4, 3, 12};
  const double sums[] = {4.0, std::numeric_limits<double>::quiet_NaN(), 4.0};
  const EpochResult r = epoch_result_from_sums(sums, plan, 1.0, nullptr);
  EXPECT_EQ(r.steps, 1);
  EXPECT_EQ(r.nonfinite_step, 1);
  EXPECT_DOUBLE_EQ(r.mean_loss, 1.0);
  const double first_bad[] = {std::numeric_limits<double>::infinity(), 1.0, 1.0};
  int calls = 0;
  const EpochResult none = epoch_result_from_sums(first_bad, plan, 1.0, [&](int64_t, double) { ++calls; });
  EXPECT_EQ(none.steps, 0);
  EXPECT_EQ(none.nonfinite_step, 0);
  EXPECT_EQ(none.mean_loss, 0.0);
  EXPECT_EQ(calls, 0) << "no finite step: no progress line";
}

}  // namespace
}  // namespace tb
