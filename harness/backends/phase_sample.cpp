// harness/backends/phase_sample.cpp — see phase_sample.h. Sampled (N > K): slot 0 is step
// 0, slot K - 1 is step N - 1, slot j in [1, K - 1) is step 1 + floor((j - 1) M / k) with
// M = N - 2 middle steps and k = K - 2 middle slots (M > k, so the steps are distinct).
#include "harness/backends/phase_sample.h"

#include <algorithm>
#include <stdexcept>

namespace tb {

PhaseSample::PhaseSample(int64_t steps, int64_t max_timed) : steps_(steps), max_timed_(max_timed) {
  // At least one slot between the first and the last, or the middle steps would go uncounted.
  if (steps < 0 || max_timed < 3) throw std::invalid_argument("PhaseSample: steps >= 0 and max_timed >= 3");
}

int64_t PhaseSample::timed() const { return std::min(steps_, max_timed_); }

int64_t PhaseSample::step_of(int64_t slot) const {
  if (all() || slot == 0) return slot;
  if (slot == max_timed_ - 1) return steps_ - 1;
  return 1 + (slot - 1) * middle() / middle_slots();
}

int64_t PhaseSample::slot(int64_t step) const {
  if (step < 0 || step >= steps_) return -1;
  if (all() || step == 0) return step;
  if (step == steps_ - 1) return max_timed_ - 1;
  // The smallest j with floor(j M / k) >= t is ceil(t k / M); step t + 1 is timed when it maps back.
  const int64_t t = step - 1, j = (t * middle_slots() + middle() - 1) / middle();
  return j < middle_slots() && j * middle() / middle_slots() == t ? j + 1 : -1;
}

double PhaseSample::weight(int64_t slot) const {
  if (all() || slot == 0 || slot == max_timed_ - 1) return 1.0;
  return static_cast<double>(middle()) / static_cast<double>(middle_slots());
}

}  // namespace tb
