// harness/runner.h — runs one configuration: warm-up, R timed repetitions, checks.
// The single place where timing totals, samples/s, the non-finite-loss rule,
// evaluation and the per-epoch loss curve are produced for every backend.
#pragma once

#include <vector>

#include "datasets/dataset.h"
#include "harness/env_capture.h"
#include "harness/progress.h"
#include "harness/result_row.h"
#include "harness/run_config.h"

namespace tb {

struct RunOutcome {
  std::vector<ResultRow> rows;      // R rows, or one skipped/failed row
  std::vector<CurvePoint> curves;   // per (repetition, epoch)
  bool failed = false;
  bool root = true;                 // false on ranks other than 0: they write nothing
  // Failed on this process alone (an exception), not at a point every rank reaches
  // together (a non-finite loss is agreed collectively): other ranks may be waiting
  // in a collective for this one, so a multi-process job must be ended (aborted).
  bool local_failure = false;
  // Multi-process configurations run in a child job: the CSV lines it wrote
  // (rows mirrors them with the fields the summary needs).
  std::vector<std::string> row_lines, curve_lines;
};

// Checks a loaded dataset against the configuration (layer sizes, batch size);
// returns "" when they fit, else a one-line reason naming the flag.
std::string check_data_fits(const RunConfig& c, const Dataset& data);

// Trains c.backend on `data` (already checked with check_data_fits). Never throws
// for a failed run: a non-finite loss or an exception becomes a `failed: why` row.
RunOutcome run_configuration(const RunConfig& c, const Dataset& data, const RunIdentity& id, Progress& progress);

// A single skipped/failed row for configuration c.
ResultRow status_row(const RunConfig& c, const RunIdentity& id, const std::string& status);

}  // namespace tb
