// harness/runner.h — runs one configuration: warm-up, R timed repetitions, checks.
// The single place where timing totals, samples/s, the non-finite-loss rule,
// evaluation, the per-epoch loss curve and every job-wide reduction (slowest rank,
// phase maxima, agreement of the ranks) are produced for every backend. Each
// repetition's row goes to the sink as soon as the repetition ends.
#pragma once

#include <vector>

#include "datasets/dataset.h"
#include "harness/env_capture.h"
#include "harness/job.h"
#include "harness/progress.h"
#include "harness/result_row.h"
#include "harness/run_config.h"

namespace tb {

// Where rows go as they are made (rank 0 only): results.csv / curves.csv, or a summary.
class RowSink {
 public:
  virtual ~RowSink() = default;
  // One repetition's row with its per-epoch curve (empty for skipped/failed rows).
  virtual void add(const ResultRow& row, const std::vector<CurvePoint>& curve) = 0;
};

struct RunOutcome {
  std::vector<ResultRow> rows;  // what went to the sink (rank 0), for summaries
  bool failed = false;
  // Failed on this process alone (an exception), not at a point every rank reaches
  // together (a non-finite loss is agreed collectively): other ranks may be waiting
  // in a collective for this one, so a multi-process job must be aborted.
  bool local_failure = false;
  std::string failure;  // the failed row's status
};

// Checks a loaded dataset against the configuration (layer sizes, batch size);
// returns "" when they fit, else a one-line reason naming the flag.
std::string check_data_fits(const RunConfig& c, const Dataset& data);

// Trains c.backend on `data` (already checked with check_data_fits) as this
// process's part of `job`. Never throws for a failed run: a non-finite loss or an
// exception becomes a `failed: why` row; an inapplicable knob or a backend that
// cannot run here a `skipped: why` row. Rows reach `sink` on rank 0 only.
RunOutcome run_configuration(const RunConfig& c, const Dataset& data, Job& job, const RunIdentity& id,
                             Progress& progress, RowSink& sink);

// Whether every rank of `job` can hold configuration c (host_memory.h), asked before any
// data is made; collective. "" when all can, else the failed row's status, agreed by all.
std::string host_memory_status(const RunConfig& c, Job& job);

// A single skipped/failed row for configuration c.
ResultRow status_row(const RunConfig& c, const RunIdentity& id, const std::string& status);

}  // namespace tb
