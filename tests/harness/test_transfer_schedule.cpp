// tests/harness/test_transfer_schedule.cpp — the double-buffer staging schedule,
// executed by a small simulator of two in-order streams and events: every step
// trains on its own batch, and no buffer is overwritten before it was consumed,
// whatever the relative speed of the two streams.
#include <gtest/gtest.h>


#include "harness/backends/transfer_schedule.h"

namespace tb {
namespace {

// Simulates CUDA semantics: each stream runs its ops in issue order; a wait blocks
// its stream until the most recent record of that event (at the time the wait was
// issued) has executed. `copy_first` picks which stream runs when both can.
void simulate(int64_t steps, bool copy_first) {
  const std::vector<StagingOp> ops = double_buffer_schedule(steps);
  struct Queued {
    size_t id;               // position in the issue order
    int64_t waits_for = -1;  // id of the record this wait depends on; -1 none
  };
  std::vector<Queued> copy_q, compute_q;
  // Last record of consumed[b] (kind 0) / staged[b] (kind 1) at issue time. Both
  // consumed events are recorded before the epoch: already complete (-1).
  int64_t last_record[2][2] = {{-1, -1}, {-1, -1}};
  for (size_t i = 0; i < ops.size(); ++i) {
    const StagingOp& op = ops[i];
    Queued q{i};
    if (op.kind == StagingOp::kCopyWaitsConsumed) q.waits_for = last_record[0][op.buffer];
    if (op.kind == StagingOp::kComputeWaitsStaged) q.waits_for = last_record[1][op.buffer];
    if (op.kind == StagingOp::kComputeRecordsConsumed) last_record[0][op.buffer] = static_cast<int64_t>(i);
    if (op.kind == StagingOp::kCopyRecordsStaged) last_record[1][op.buffer] = static_cast<int64_t>(i);
    (op.kind <= StagingOp::kCopyRecordsStaged ? copy_q : compute_q).push_back(q);
  }
  std::vector<bool> done(ops.size(), false);
  int64_t holds[2] = {-1, -1};       // batch staged in each buffer
  bool pending[2] = {false, false};  // staged but not yet consumed
  int64_t trained = 0;
  size_t cp = 0, kp = 0;
  auto ready = [&](const Queued& q) { return q.waits_for < 0 || done[static_cast<size_t>(q.waits_for)]; };
  auto run = [&](const Queued& q) {
    const StagingOp& op = ops[q.id];
    if (op.kind == StagingOp::kCopyFills) {
      EXPECT_FALSE(pending[op.buffer]) << "buffer " << op.buffer << " overwritten before batch " << holds[op.buffer]
                                       << " was consumed";
      holds[op.buffer] = op.step;
      pending[op.buffer] = true;
    } else if (op.kind == StagingOp::kComputeTrains) {
      EXPECT_EQ(holds[op.buffer], op.step) << "step " << op.step << " trained on the wrong batch";
      EXPECT_EQ(op.step, trained) << "steps out of order";
      ++trained;
    } else if (op.kind == StagingOp::kComputeRecordsConsumed) {
      pending[op.buffer] = false;
    }
    done[q.id] = true;
  };
  while (cp < copy_q.size() || kp < compute_q.size()) {
    const bool c_ok = cp < copy_q.size() && ready(copy_q[cp]);
    const bool k_ok = kp < compute_q.size() && ready(compute_q[kp]);
    ASSERT_TRUE(c_ok || k_ok) << "deadlock";
    if (c_ok && (copy_first || !k_ok)) run(copy_q[cp++]);
    else run(compute_q[kp++]);
  }
  EXPECT_EQ(trained, steps);
}

TEST(TransferSchedule, EveryStepTrainsOnItsBatchAndNoBufferIsOverwrittenEarly) {
  for (int64_t steps : {0, 1, 2, 3, 10}) {
    simulate(steps, /*copy_first=*/true);   // copies race ahead
    simulate(steps, /*copy_first=*/false);  // compute races ahead
  }
}

TEST(TransferSchedule, StagesTheNextBatchBeforeTrainingTheCurrentOne) {
  const std::vector<StagingOp> ops = double_buffer_schedule(3);
  // The fill of batch 1 is issued before the training of batch 0: they overlap.
  size_t fill1 = 0, train0 = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == StagingOp::kCopyFills && ops[i].step == 1) fill1 = i;
    if (ops[i].kind == StagingOp::kComputeTrains && ops[i].step == 0) train0 = i;
  }
  EXPECT_LT(fill1, train0);
}

}  // namespace
}  // namespace tb
