// harness/backends/step_trainer.cpp — see step_trainer.h: the CPU trainers' epoch loop
// (one step(s, rows, B) per batch of the plan, stopping at the first non-finite loss).
#include "harness/backends/step_trainer.h"

#include <algorithm>
#include <cmath>

namespace tb {

EpochResult StepTrainer::train_epoch(const EpochPlan& plan, const StepCallback& on_step) {
  EpochResult r;
  double sum = 0;
  for (int64_t s = 0; s < plan.num_batches; ++s) {
    const int64_t begin = s * plan.batch;
    const int64_t count = std::min(plan.batch, plan.rows - begin);
    const double loss = step(s, plan.order->data() + begin, count);
    if (!std::isfinite(loss)) {
      r.nonfinite_step = s;
      break;
    }
    sum += loss;
    ++r.steps;
    if (on_step) on_step(s, loss);
  }
  r.mean_loss = r.steps ? sum / static_cast<double>(r.steps) : 0.0;
  return r;
}

PhaseTimes StepTrainer::take_phase_times() {
  const PhaseTimes t = phases_;
  phases_ = PhaseTimes{};
  return t;
}

}  // namespace tb
