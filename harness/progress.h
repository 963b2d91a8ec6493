// harness/progress.h — one self-overwriting status line on a terminal:
// backend, epoch, step, loss, samples/s, ETA. Silent when stderr is not a
// terminal or CI is set, so logs and CI output stay clean.
#pragma once

#include <cstdint>
#include <string>

#include "harness/timing.h"

namespace tb {

class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled) {}
  static bool auto_enabled();  // isatty(stderr) && CI unset

  // A new phase of work of total_steps steps of `rows_per_step` rows each.
  void start(const std::string& label, int64_t total_steps, int64_t rows_per_step);
  void step(int64_t epoch, int64_t epochs, int64_t step, int64_t steps, double loss);
  void finish();

 private:
  bool enabled_;
  std::string label_;
  int64_t total_ = 0, done_ = 0, rows_per_step_ = 0;
  Stopwatch clock_;
  double last_print_ = -1;
};

}  // namespace tb
