// harness/cli.h — command-line parsing for `trainbench run` (and suite lines).
// Every flag is declared once in a table (name, value hint, help); parse errors
// throw UsageError with one line naming the flag and what is allowed, which
// main() prints before exiting with code 2.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "harness/run_config.h"

namespace tb {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Flags shared by `run` and suite lines, after parsing (lists not yet expanded).
struct RunFlags {
  RunConfig config;              // every scalar setting
  std::vector<std::string> backends;    // --backend / --backends (one or more)
  std::vector<int> threads;             // --threads: resolved counts (>= 1)
  std::vector<int> world_sizes;         // --world-sizes (suites): ranks for multi-process backends
  std::vector<int> workers;             // --workers: cpu-hogwild's worker processes (suites: a list)
  std::string out;                      // --out (run: CSV file)
  bool no_ceilings = false;             // --no-ceilings (run): env JSON without measured ceilings
  bool layers_given = false;
  bool samples_given = false;
  bool task_given = false;    // --task, --target: csv data only
  bool target_given = false;
  bool noise_given = false;   // --noise: synthetic regression only
};

// Parses flags into `flags`, starting from its current values (suite defaults).
// `allow_lists`: suite lines may give comma lists for --backends, --threads and --workers.
void parse_run_flags(const std::vector<std::string>& args, bool allow_lists, RunFlags* flags);

// Checks cross-flag rules (batch <= samples, layers vs model...) and resolves
// the dataset spec. Throws UsageError.
void validate_run_flags(RunFlags* flags);

// The `run` flag reference, for --help and the README.
// The `run` flag reference, for --help and the README; for_export: the flags that
// describe a workload only (`export --help`).
std::string run_flags_help(bool for_export = false);

int hardware_threads();

// A workload name (--workload, or a suite entry's NAME; `what` names which): valid
// UTF-8, non-empty, no commas, quotes or line breaks. Throws UsageError.
void check_workload_name(const std::string& what, const std::string& name);

}  // namespace tb
