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

}  // namespace tb
