// harness/cpu_trainer_base.h — the epoch loop shared by the CPU trainers.
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
  // One SGD step on rows[0, count) — the whole batch, or this worker's shard of a
  // global batch of global_rows rows (gradients are scaled by 1/global_rows so
  // shards sum to the global mean). Returns the mean loss over rows[0, count).
  virtual double step(const int64_t* rows, int64_t count, int64_t global_rows) = 0;

  PhaseTimes phases_;
};

}  // namespace tb
