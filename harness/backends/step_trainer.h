// harness/backends/step_trainer.h — the epoch loop shared by the CPU trainers.
// Walks the plan's batches, calls step() on each, stops at the first non-finite
// loss, and reports every step to the progress callback. GPU trainers implement
// train_epoch themselves (they must not synchronise per step).
#pragma once

#include <cstdint>

#include "harness/backend.h"

namespace tb {

class StepTrainer : public Trainer {
 public:
  EpochResult train_epoch(const EpochPlan& plan, const StepCallback& on_step) override;
  PhaseTimes take_phase_times() override;

 protected:
  // Step s of the epoch: one SGD step on the global batch rows[0, count) (a DDP
  // trainer trains its shard of it; gradients are scaled by 1/count so shards sum to
  // the global mean). Returns the mean loss over the batch.
  virtual double step(int64_t s, const int64_t* rows, int64_t count) = 0;

  PhaseTimes phases_;
};

}  // namespace tb
