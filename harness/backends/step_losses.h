// harness/backends/step_losses.h — an epoch's result from its per-step loss sums, as the GPU
// trainers read them back once per epoch (no per-step host synchronisation).
// sums[s] is step s's summed loss over its rows; the step's loss is
// sums[s] / (rows of step s x per_row) (per_row: O for the per-element MSE sum, 1 for
// cross-entropy). Training counts as stopped at the first non-finite step loss.
#pragma once

#include "harness/backend.h"

namespace tb {

// Fills steps, mean_loss and nonfinite_step, and calls on_step once with the last
// finite step and the epoch's mean (the progress line moves per epoch).
EpochResult epoch_result_from_sums(const double* sums, const EpochPlan& plan, double per_row,
                                   const StepCallback& on_step);

}  // namespace tb
