// harness/progress.h — one self-overwriting status line on a terminal:
// backend, epoch, step, loss, samples/s, ETA. Silent when stderr is not a
// terminal or CI is set (not to false or 0), so logs and CI output stay clean (TB_PROGRESS=1 forces it
// on, e.g. `mpirun -x TB_PROGRESS=1 ...` for rank 0; TB_PROGRESS=0 off). A suite
// prefixes "[k/N]" and its own ETA; a suite's multi-process job hands its rank 0's
// line back through the file TB_PROGRESS_FILE, which the suite redraws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/timing.h"

namespace tb {

// `text` cut to fewer than `width` columns (bytes; a UTF-8 character is never split) by
// taking out its middle for "~"; unchanged when it fits or width < 8.
std::string fit_to_width(const std::string& text, size_t width);

class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled) {}
  static bool auto_enabled();  // TB_PROGRESS, else isatty(stderr) && CI unset, empty, false or 0
  // The progress of rank 0 of a job the suite started: written to TB_PROGRESS_FILE
  // when the suite set it ("" otherwise).
  static std::string handover_file();

  // Text drawn before every line ("[3/12] ") and the seconds the rest of the suite
  // is expected to take after the current configuration (< 0: not shown).
  void set_context(const std::string& prefix, double rest_s) {
    prefix_ = prefix;
    rest_s_ = rest_s;
  }
  // Also writes every line to this file (rank 0 of a suite's job: handover_file()).
  void set_handover(const std::string& path) { handover_ = path; }
  // Draws one already formatted line (a child job's, read from its handover file).
  void draw(const std::string& line);

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
  std::string prefix_;
  double rest_s_ = -1;
  std::string handover_;
};

}  // namespace tb
