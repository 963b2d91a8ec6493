// harness/transfer_schedule.cpp — see transfer_schedule.h.
#include "harness/backends/transfer_schedule.h"

namespace tb {

std::vector<StagingOp> double_buffer_schedule(int64_t steps) {
  std::vector<StagingOp> ops;
  auto stage = [&](int64_t s) {
    const int b = static_cast<int>(s % 2);
    ops.push_back({StagingOp::kCopyWaitsConsumed, b, s});
    ops.push_back({StagingOp::kCopyFills, b, s});
    ops.push_back({StagingOp::kCopyRecordsStaged, b, s});
  };
  if (steps > 0) stage(0);
  for (int64_t s = 0; s < steps; ++s) {
    const int b = static_cast<int>(s % 2);
    ops.push_back({StagingOp::kComputeWaitsStaged, b, s});
    if (s + 1 < steps) stage(s + 1);
    ops.push_back({StagingOp::kComputeTrains, b, s});
    ops.push_back({StagingOp::kComputeRecordsConsumed, b, s});
  }
  return ops;
}

}  // namespace tb
