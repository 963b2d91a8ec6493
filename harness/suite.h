// harness/suite.h — suite files: a grid of configurations run into one folder.
// Format (bench/suites/*.suite), one entry per line, '#' starts a comment:
//   defaults: --epochs 3 --warmup 1 --reps 3          (applies to the entries below it)
//   NAME: --model linear --layers 64,1 --samples 100000 --batch 1024 --backends reference,cpu-omp --threads 1,all
// NAME becomes the CSV `workload`. An entry expands to one configuration per
// backend, and per thread count for the CPU-thread backends (reference is always
// 1 thread; GPU backends ignore --threads). Every line is validated before anything runs.
#pragma once

#include <string>
#include <vector>

#include "harness/cli.h"

namespace tb {

struct SuiteEntry {
  std::string name;
  std::string file;  // the suite file the line is in (an included one, or the suite itself)
  int line = 0;
  RunFlags flags;
};

// Lines: `NAME: --flag value ...` (an entry), `defaults: --flag ...` (flags for the
// entries below it in this file), `include: FILE` (the entries of FILE, a path
// relative to this file's folder, parsed with its own defaults; up to 8 deep). Words are
// split at whitespace, without shell quoting: a line with ' " or \ is refused (run_peers.py
// reads the files too, and must read the same words).
// Throws UsageError "FILE:LINE: message" on any bad line.
std::vector<SuiteEntry> parse_suite(const std::string& path);
std::vector<RunConfig> expand_suite(const std::vector<SuiteEntry>& entries);

// Runs the suite into out_dir (created; "" = results/<run-id>): results.csv,
// curves.csv, env.json, log.txt; prints a summary. Returns the exit code:
// 0 all rows ok or skipped, 1 some row failed. Throws UsageError/CsvError on bad input.
int run_suite(const std::string& path, std::string out_dir, const std::string& command_line,
              bool no_ceilings = false);

// `suite FILE --dry-run`: the checks run_suite makes before it writes anything (bad
// input throws UsageError), then one line per configuration (runs, or skipped: why) on
// stdout. Runs nothing, creates nothing. Returns 0.
int list_suite(const std::string& path, const std::string& out_dir, bool no_ceilings);

// `suite-worker FILE INDEX RUN_ID TIMESTAMP DIR` (internal): one multi-process
// configuration of a suite, as one rank of the job the suite started under mpirun;
// rank 0 writes DIR/results.csv and DIR/curves.csv. Returns the exit code.
int run_suite_worker(const std::vector<std::string>& args);

}  // namespace tb
