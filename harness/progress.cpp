// harness/progress.cpp — see progress.h. Redraws at most 10 times a second.
#include "harness/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace tb {

bool Progress::auto_enabled() { return ::isatty(STDERR_FILENO) && std::getenv("CI") == nullptr; }

void Progress::start(const std::string& label, int64_t total_steps, int64_t rows_per_step) {
  label_ = label;
  total_ = total_steps;
  rows_per_step_ = rows_per_step;
  done_ = 0;
  clock_.restart();
  last_print_ = -1;
}

void Progress::step(int64_t epoch, int64_t epochs, int64_t step, int64_t steps, double loss) {
  ++done_;
  if (!enabled_) return;
  const double t = clock_.seconds();
  if (last_print_ >= 0 && t - last_print_ < 0.1 && done_ < total_) return;
  last_print_ = t;
  const double rate = t > 0 ? static_cast<double>(done_ * rows_per_step_) / t : 0.0;
  const double eta = done_ > 0 ? t / static_cast<double>(done_) * static_cast<double>(total_ - done_) : 0.0;
  std::fprintf(stderr, "\r\033[K%s  epoch %lld/%lld  step %lld/%lld  loss %.5g  %.3g samples/s  ETA %.0f s",
               label_.c_str(), static_cast<long long>(epoch), static_cast<long long>(epochs),
               static_cast<long long>(step + 1), static_cast<long long>(steps), loss, rate, eta);
  std::fflush(stderr);
}

void Progress::finish() {
  if (enabled_ && last_print_ >= 0) std::fprintf(stderr, "\r\033[K");
  last_print_ = -1;
}

}  // namespace tb
