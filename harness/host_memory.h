// harness/host_memory.h — will a configuration fit in this machine's memory? Checked
// before the data is generated or loaded, so an impossible size is a
// `failed: out of host memory (needs ~X MiB, available Y MiB)` row, never a
// std::bad_alloc halfway through. Shapes: N rows, D in, O out, B batch, P params.
#pragma once

#include <cstdint>
#include <string>

#include "harness/run_config.h"

namespace tb {

// Bytes one process of configuration c needs on the host, roughly: the dataset it
// holds (N x (D + O) floats, or N x D + N labels; a synthetic rank of a W-rank job
// about N / W rows) plus the model's parameters, gradients and optimizer state
// (3P, float64 for the oracle) and activations for B rows, plus for a linear regression
// on a CPU backend the fused step's two packed copies of W's shape (about 2P).
int64_t host_bytes_needed(const RunConfig& c, int world_size);

// MemAvailable from /proc/meminfo in bytes, or -1 where it cannot be read.
int64_t host_bytes_available();

// "" when c fits (or availability is unknown); else the reason for the failed row,
// e.g. "out of host memory (needs ~5120 MiB, available 3012 MiB)". ranks_here: the
// job's processes that run on this host (all of them for the suite's launches).
std::string host_memory_shortfall(const RunConfig& c, int world_size, int ranks_here);

}  // namespace tb
