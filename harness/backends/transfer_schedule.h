// harness/backends/transfer_schedule.h — the order of operations of double-buffered batch
// staging (cuda backend, --data-placement host), as plain host logic so the CPU
// tests can check it. Two staging buffers; a copy stream fills buffer s % 2 with
// batch s while the compute stream trains on batch s - 1. Events order the two
// streams: compute waits until its batch is staged; the copy stream waits until
// compute has consumed what the buffer held before (batch s - 2).
#pragma once

#include <cstdint>
#include <vector>

namespace tb {

struct StagingOp {
  enum Kind {
    kCopyWaitsConsumed,   // copy stream: wait for event consumed[buffer]
    kCopyFills,           // copy stream: write batch `step` into buffer
    kCopyRecordsStaged,   // copy stream: record event staged[buffer]
    kComputeWaitsStaged,  // compute stream: wait for event staged[buffer]
    kComputeTrains,       // compute stream: the training step on batch `step` from buffer
    kComputeRecordsConsumed,  // compute stream: record event consumed[buffer]
  };
  Kind kind;
  int buffer;
  int64_t step;
};

// The host-side issue order for an epoch of `steps` batches: stage batch 0, then
// for each step s: compute waits for s, stage s + 1 (overlapping s), train s,
// mark s's buffer consumed. Both consumed events are recorded before the epoch.
std::vector<StagingOp> double_buffer_schedule(int64_t steps);

}  // namespace tb
