// harness/env_capture.h — provenance for every result: env.json beside results.csv.
// Commit and dirty flag, command line, compiler and flags, build type, CPU,
// OpenMP settings, OS, library versions, GPUs (or why there are none), seed.
#pragma once

#include <cstdint>
#include <string>

namespace tb {

struct RunIdentity {
  std::string run_id;     // 20261122-013000-hostname
  std::string timestamp;  // ISO-8601 UTC, 2026-11-22T01:30:00Z
  std::string host;
};

RunIdentity make_run_identity();

// The whole env.json document.
std::string env_json(const RunIdentity& id, const std::string& command_line, uint64_t seed);

// Escapes a string for a JSON string literal (without the quotes).
std::string json_escape(const std::string& s);

}  // namespace tb
