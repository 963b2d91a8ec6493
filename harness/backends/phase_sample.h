// harness/backends/phase_sample.h — which steps of an epoch the GPU trainers time with
// per-phase CUDA events, as plain host logic so the CPU tests can check it. Events are
// a fixed pool (kMaxTimedSteps steps' worth, created once, however long the epoch) read
// after the epoch, outside the timed region; an epoch of N steps times all of them when
// N <= K = kMaxTimedSteps, else K of them: its first and last step (the first waits for
// an unprefetched batch, the last may be short) each standing for itself, and K - 2
// steps spread evenly over the N - 2 between them, each standing for (N - 2) / (K - 2)
// steps. A phase's epoch total is then sum over timed steps of weight x interval:
// exact for N <= K, an estimate from evenly spaced steps beyond (README "Per-phase
// timing").
#pragma once

#include <cstdint>

namespace tb {

inline constexpr int64_t kMaxTimedSteps = 128;

class PhaseSample {
 public:
  PhaseSample() = default;
  // An epoch of `steps` steps, at most `max_timed` (>= 3) of them timed.
  PhaseSample(int64_t steps, int64_t max_timed = kMaxTimedSteps);
  int64_t steps() const { return steps_; }
  int64_t timed() const;                // steps timed, min(steps, max_timed)
  int64_t slot(int64_t step) const;     // its index among the timed steps, or -1 when untimed
  int64_t step_of(int64_t slot) const;  // the step timed in slot [0, timed())
  double weight(int64_t slot) const;    // how many of the epoch's steps that slot stands for

 private:
  int64_t steps_ = 0, max_timed_ = kMaxTimedSteps;
  bool all() const { return steps_ <= max_timed_; }
  int64_t middle() const { return steps_ - 2; }      // M: steps between the first and the last
  int64_t middle_slots() const { return max_timed_ - 2; }  // k: slots among them
};

}  // namespace tb
