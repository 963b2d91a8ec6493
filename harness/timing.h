// harness/timing.h — wall-clock timing on the host and per-phase accumulators.
// CPU backends time with std::chrono::steady_clock; GPU backends fill the same
// PhaseTimes from CUDA events read once per repetition.
#pragma once

#include <chrono>

namespace tb {

// Seconds spent in each phase of training, summed over a repetition.
struct PhaseTimes {
  double transfer_s = 0;   // moving data into place (gather of shuffled rows, H2D copies)
  double forward_s = 0;    // forward pass and loss
  double backward_s = 0;   // gradients
  double comm_s = 0;       // exposed communication (multi-device backends)
  double optimizer_s = 0;  // parameter update

  PhaseTimes& operator+=(const PhaseTimes& o) {
    transfer_s += o.transfer_s;
    forward_s += o.forward_s;
    backward_s += o.backward_s;
    comm_s += o.comm_s;
    optimizer_s += o.optimizer_s;
    return *this;
  }
};

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void restart() { start_ = std::chrono::steady_clock::now(); }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  // Returns the seconds since the last lap (or construction) and starts a new lap.
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - start_).count();
    start_ = now;
    return s;
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tb
