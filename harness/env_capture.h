// harness/env_capture.h — provenance for every result: env.json beside results.csv.
// Commit and dirty flag, command line, compiler and flags, build type, CPU,
// OpenMP settings, OS, library versions, GPUs (or why there are none), seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

struct RunIdentity {
  std::string run_id;     // 20261122-013000-hostname-4242 (UTC time, host, process id)
  std::string timestamp;  // ISO-8601 UTC, 2026-11-22T01:30:00Z
  std::string host;
};

RunIdentity make_run_identity();

// This host's record (hostname, OS, CPU, memory, topology through hwloc, CPU
// frequency), as JSON text: what every rank of a multi-process job sends rank 0.
std::string host_record_json();

// The whole env.json document (harness/json_out.h: valid JSON whatever the bytes of
// the command line or the host's strings). hosts: the host records of every node the
// run used (host_record_json() of each, duplicates by hostname dropped); empty = this one.
// ceilings: the "ceilings" object as JSON text (harness/ceilings.h); empty = none written.
std::string env_json(const RunIdentity& id, const std::string& command_line, uint64_t seed,
                     const std::vector<std::string>& hosts = {}, const std::string& ceilings = {});

// Appending a run's rows to a results file whose env.json (FILE.csv.env.json) describes
// the rows already there: that env.json is kept, never replaced, so the earlier rows keep
// their environment. Returns "" when `earlier` (that env.json's text) and `now` (this
// run's env_json) name the same build and machine (trainbench version, commit and dirty
// flag, build, host name, OS, kernel, CPU, the nodes of a multi-process run, GPU driver
// and libraries), else the first difference, "differs from this run's (git.commit:
// '5bac89a...' then, '1f2e...' now)", or "cannot be read (...)".
std::string env_difference(const std::string& earlier, const std::string& now);

// `earlier` (an env.json's text) with this run (`now`, its env_json) added to its
// "appended_runs" array: its run_id, timestamp, command_line and seed, and the settings
// a run chooses for itself (openmp, cpu_gemm, blas_env, cuda_visible_devices, gpus). The
// file then describes every run whose rows the results file holds.
std::string env_with_appended_run(const std::string& earlier, const std::string& now);

}  // namespace tb
