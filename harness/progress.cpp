// harness/progress.cpp — see progress.h. Redraws at most 10 times a second.
#include "harness/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tb {

bool Progress::auto_enabled() {
  if (const char* f = std::getenv("TB_PROGRESS"); f && *f) return std::string(f) != "0";
  // CI=false or CI= (a shell that clears it) is not CI.
  const char* ci = std::getenv("CI");
  const bool in_ci = ci != nullptr && *ci && std::string(ci) != "false" && std::string(ci) != "0";
  return ::isatty(STDERR_FILENO) && !in_ci;
}

std::string fit_to_width(const std::string& text, size_t width) {
  if (width < 8 || text.size() < width) return text;
  // Cut from the middle, at UTF-8 character starts: the head names the run, the tail
  // holds the loss and the ETAs. One column left free: a full line wraps on some terminals.
  size_t head = (width - 2) / 3, tail_from = text.size() - (width - 2 - head);
  const auto cont = [&](size_t i) { return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80; };
  while (head > 0 && cont(head)) --head;
  while (cont(tail_from)) ++tail_from;
  return text.substr(0, head) + "~" + text.substr(tail_from);
}

std::string Progress::handover_file() {
  const char* f = std::getenv("TB_PROGRESS_FILE");
  return f ? f : "";
}

void Progress::draw(const std::string& line) {
  if (!enabled_ || line.empty()) return;
  std::string tail;
  if (rest_s_ >= 0) tail = "  (suite after this: ~" + std::to_string(static_cast<long long>(rest_s_ + 0.5)) + " s)";
  // A line wider than the terminal wraps, and \r then redraws only its last part: the
  // rest stays on screen, one stale line per redraw.
  winsize ws{};
  const size_t cols = ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
  const std::string text = prefix_ + line + tail;
  std::fprintf(stderr, "\r\033[K%s", (cols > 0 ? fit_to_width(text, cols) : text).c_str());
  std::fflush(stderr);
  last_print_ = clock_.seconds();
}

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
  if (!enabled_ && handover_.empty()) return;
  const double t = clock_.seconds();
  if (last_print_ >= 0 && t - last_print_ < 0.1 && done_ < total_) return;
  last_print_ = t;
  const double rate = t > 0 ? static_cast<double>(done_ * rows_per_step_) / t : 0.0;
  const double eta = done_ > 0 ? t / static_cast<double>(done_) * static_cast<double>(total_ - done_) : 0.0;
  char line[512];
  std::snprintf(line, sizeof line, "%s  epoch %lld/%lld  step %lld/%lld  loss %.5g  %.3g samples/s  ETA %.0f s",
                label_.c_str(), static_cast<long long>(epoch), static_cast<long long>(epochs),
                static_cast<long long>(step + 1), static_cast<long long>(steps), loss, rate, eta);
  if (!handover_.empty()) {  // whole-file replace: the reader sees the old line or the new one
    const std::string tmp = handover_ + ".tmp";
    if (std::FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fputs(line, f);
      std::fclose(f);
      std::rename(tmp.c_str(), handover_.c_str());
    }
  }
  if (enabled_) draw(line);
}

void Progress::finish() {
  if (enabled_ && last_print_ >= 0) std::fprintf(stderr, "\r\033[K");
  last_print_ = -1;
}

}  // namespace tb
