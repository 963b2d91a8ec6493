// tests/harness/test_phase_sample.cpp — which steps the GPU trainers time with phase
// events (harness/backends/phase_sample.h), against a naive scan of every step: every
// step when the epoch fits the pool, else the first, the last and evenly spaced steps
// between, whose weights add up to the epoch's steps.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness/backends/phase_sample.h"

namespace tb {
namespace {

TEST(PhaseSample, AnEpochThatFitsThePoolTimesEveryStepOnce) {
  for (int64_t n : {0, 1, 2, 7, 128}) {
    const PhaseSample s(n, 128);
    EXPECT_EQ(s.timed(), n);
    for (int64_t step = 0; step < n; ++step) {
      EXPECT_EQ(s.slot(step), step);
      EXPECT_EQ(s.step_of(step), step);
      EXPECT_EQ(s.weight(step), 1.0);
    }
  }
}

TEST(PhaseSample, ALongEpochTimesThePoolsWorthSpreadEvenlyWithWeightsSummingToItsSteps) {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{129, 128}, {1000, 128}, {100000, 128}, {10, 3}, {11, 5}}) {
    const PhaseSample s(n, k);
    ASSERT_EQ(s.timed(), k) << n;
    // The naive scan: slot() over every step finds exactly the timed steps, in order.
    std::vector<int64_t> timed;
    for (int64_t step = 0; step < n; ++step) {
      const int64_t j = s.slot(step);
      if (j < 0) continue;
      EXPECT_EQ(j, static_cast<int64_t>(timed.size())) << "n " << n << " step " << step;
      EXPECT_EQ(s.step_of(j), step) << "n " << n << " slot " << j;
      timed.push_back(step);
    }
    ASSERT_EQ(static_cast<int64_t>(timed.size()), k) << n;
    EXPECT_EQ(timed.front(), 0);
    EXPECT_EQ(timed.back(), n - 1);
    EXPECT_EQ(s.weight(0), 1.0);
    EXPECT_EQ(s.weight(k - 1), 1.0);
    double total = 0;
    for (int64_t j = 0; j < k; ++j) total += s.weight(j);
    EXPECT_NEAR(total, static_cast<double>(n), 1e-9 * static_cast<double>(n)) << n;
    // Evenly spaced: consecutive middle steps differ by floor or ceil of (n - 2) / (k - 2).
    if (k > 3) {
      const double gap = static_cast<double>(n - 2) / static_cast<double>(k - 2);
      for (size_t i = 2; i + 1 < timed.size(); ++i) {
        const int64_t d = timed[i] - timed[i - 1];
        EXPECT_TRUE(d == static_cast<int64_t>(std::floor(gap)) || d == static_cast<int64_t>(std::ceil(gap)))
            << "n " << n << " gap " << d;
      }
    }
  }
}

// The weighted sum of a per-step quantity estimates its epoch total: exact for a
// constant, within one gap's worth of slope for a linear ramp.
TEST(PhaseSample, WeightedTimedStepsEstimateTheEpochTotal) {
  const int64_t n = 5000;
  const PhaseSample s(n, 128);
  double constant = 0, ramp = 0, ramp_true = 0;
  for (int64_t step = 0; step < n; ++step) ramp_true += static_cast<double>(step);
  for (int64_t j = 0; j < s.timed(); ++j) {
    constant += s.weight(j) * 3.0;
    ramp += s.weight(j) * static_cast<double>(s.step_of(j));
  }
  EXPECT_NEAR(constant, 3.0 * n, 1e-9 * n);
  EXPECT_NEAR(ramp, ramp_true, 0.01 * ramp_true);
}

TEST(PhaseSample, RefusesAPoolWithoutASlotBetweenTheFirstAndLastStep) {
  EXPECT_THROW(PhaseSample(10, 2), std::invalid_argument);
  EXPECT_THROW(PhaseSample(-1, 8), std::invalid_argument);
}

}  // namespace
}  // namespace tb
