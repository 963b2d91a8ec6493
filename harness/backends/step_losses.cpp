// harness/step_losses.cpp — see step_losses.h.
#include "harness/backends/step_losses.h"

#include <algorithm>
#include <cmath>

namespace tb {

EpochResult epoch_result_from_sums(const double* sums, const EpochPlan& plan, double per_row,
                                   const StepCallback& on_step) {
  EpochResult r;
  double sum = 0;
  for (int64_t s = 0; s < plan.num_batches; ++s) {
    const int64_t count = std::min(plan.batch, plan.rows - s * plan.batch);
    const double l = sums[s] / (static_cast<double>(count) * per_row);
    if (!std::isfinite(l)) {
      r.nonfinite_step = s;
      break;
    }
    sum += l;
    ++r.steps;
  }
  r.mean_loss = r.steps ? sum / static_cast<double>(r.steps) : 0.0;
  if (on_step && r.steps > 0) on_step(r.steps - 1, r.mean_loss);
  return r;
}

}  // namespace tb
