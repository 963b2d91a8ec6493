// tests/cuda_trace/test_cuda_ddp_trace.cpp — `cuda-ddp`'s host-side call discipline:
// a real 2-rank mpirun job of trainbench, each rank under the fake CUDA runtime and
// NCCL (2 fake GPUs per node), one trace per rank. The MPI side is real (the NCCL id
// exchange, loss and timing reductions); the fake all-reduce moves nothing, so the
// ranks' numbers are meaningless. Asserted per rank:
//   * the generic discipline (check_all) and the epoch design (check_epochs: no
//     allocation, one host synchronisation per epoch), on the main thread;
//   * the rank works on GPU = its node-local rank: every stream it uses is on it, its
//     communicator (ncclCommInitRankConfig, once, 2 ranks, its rank) too, and the
//     watchdog thread makes it current before querying events;
//   * each bucket's ncclAllReduce runs on the reducer's own stream, never the compute
//     stream, ordered after backward produced it and before the update reads it (the
//     happens-before model); with overlap the first bucket is issued while backward is
//     still being enqueued, with --no-overlap only after it;
//   * both ranks issue the same collectives in the same order (NCCL requires it);
//   * the communicator is finalised, then destroyed, once.
#include <gtest/gtest.h>

#include "tests/cuda_trace/traced_run.h"

namespace {

using namespace tb::trace;

struct DdpCase {
  const char* name;
  std::string args;
  bool overlap;
};

void PrintTo(const DdpCase& c, std::ostream* os) { *os << c.name; }  // test names stay stable

class CudaDdp : public ::testing::TestWithParam<DdpCase> {};

TEST_P(CudaDdp, EachRankOnItsGpuBucketsOnTheNcclStreamRanksAgree) {
#if !TB_TRACE_DDP
  GTEST_SKIP() << "cuda-ddp is not built (needs MPI and NCCL)";
#endif
  const DdpCase& k = GetParam();
  const Plan plan{.warmup = 1, .reps = 1, .epochs = 2, .steps = 8};
  const int train_steps = plan.total_epochs() * plan.steps;
  const std::string name = std::string("cuda-ddp-") + k.name;
  // Buckets of ~512 bytes: several per step, so overlap has something to overlap.
  const TracedRun run = traced(name,
                               "--backend cuda-ddp --samples 256 --batch 32 --epochs 2 --warmup 1 --reps 1 "
                               "--bucket-mb 0.0005 --comm-timeout 30" + kClassify + k.args,
                               2, "", tb::test::mpirun(2));
  ASSERT_EQ(run.code, 0) << run.out;

  std::vector<std::vector<long long>> collectives(2);
  for (int rank = 0; rank < 2; ++rank) {
    const Trace t = rank_trace(name, rank);
    const std::string where = trace_path(name) + "." + std::to_string(rank) + ".log";
    ASSERT_FALSE(t.empty()) << where;
    EXPECT_NO_PROBLEMS_AT(where, check_all(t));
    std::vector<EpochSpan> ep;
    EXPECT_NO_PROBLEMS_AT(where, check_epochs(t, plan, &ep));

    const std::vector<std::string> bound = cublas_streams(t);
    ASSERT_EQ(bound.size(), 1u);
    const std::string compute = bound[0];
    int inits = 0, finalized = 0, destroyed = 0;
    std::string nccl_stream;
    for (const Call& c : t) {
      if (c.fn == "ncclCommFinalize") ++finalized;
      if (c.fn == "ncclCommDestroy") {  // a non-blocking communicator: finalised first
        ++destroyed;
        EXPECT_EQ(finalized, 1) << "rank " << rank << " destroys its communicator unfinalised: " << c.line;
      }
      if (c.has("sdev")) {
        EXPECT_EQ(c.num("sdev"), rank) << "rank " << rank << " uses another GPU: " << c.line;
      }
      if (starts(c.fn, "ncclCommInit")) {
        ++inits;
        EXPECT_EQ(c.num("nranks"), 2) << c.line;
        EXPECT_EQ(c.num("rank"), rank) << c.line;
        EXPECT_EQ(c.num("cdev"), rank) << c.line;
      }
      if (c.fn == "ncclAllReduce") {
        collectives[static_cast<size_t>(rank)].push_back(c.num("count"));
        EXPECT_NE(c.get("stream"), compute) << "all-reduce on the compute stream: " << c.line;
        if (nccl_stream.empty()) nccl_stream = c.get("stream");
        EXPECT_EQ(c.get("stream"), nccl_stream) << c.line;
      }
      if (c.tid != 0) {  // the watchdog: makes the rank's GPU current, then only polls events
        EXPECT_TRUE(c.fn == "cudaEventQuery" || (c.fn == "cudaSetDevice" && c.num("to") == rank)) << c.line;
      }
    }
    EXPECT_EQ(inits, 1);
    EXPECT_EQ(destroyed, 1);
    const size_t reduces = collectives[static_cast<size_t>(rank)].size();
    EXPECT_EQ(reduces % train_steps, 0u);
    EXPECT_GE(reduces / train_steps, 2u) << "several buckets per step expected";

    // Overlap: per step, the first bucket's all-reduce relative to the step's last GEMM.
    for (const EpochSpan& e : ep) {
      size_t begin = e.first_launch;
      for (size_t end : e.step_ends) {
        size_t first_reduce = 0, last_gemm = 0;
        for (size_t i = begin; i < end; ++i) {
          if (t[i].fn == "ncclAllReduce" && !first_reduce) first_reduce = i;
          if (t[i].fn == "cublasSgemm") last_gemm = i;
        }
        ASSERT_GT(first_reduce, 0u) << "a step without all-reduce before " << t[end].line;
        if (k.overlap) {
          EXPECT_LT(first_reduce, last_gemm) << "no overlap in the step ending " << t[end].line;
        } else {
          EXPECT_GT(first_reduce, last_gemm) << "--no-overlap reduced during backward: " << t[first_reduce].line;
        }
        begin = end + 1;
      }
    }
  }
  EXPECT_EQ(collectives[0], collectives[1]) << "the ranks' collective sequences differ";
}

// A communicator whose finalize never settles (a peer gone during teardown) is aborted
// after --comm-timeout instead of destroyed, and the job still ends with its rows.
TEST(CudaDdpTrace, AFinalizeThatNeverSettlesIsAbortedAfterTheDeadline) {
#if !TB_TRACE_DDP
  GTEST_SKIP() << "cuda-ddp is not built (needs MPI and NCCL)";
#endif
  const std::string name = "cuda-ddp-stuck-finalize";
  const TracedRun run = traced(name,
                               "--backend cuda-ddp --samples 64 --batch 16 --epochs 1 --warmup 0 --reps 1 "
                               "--comm-timeout 2" + kClassify,
                               2, "TB_FAKE_NCCL_FINALIZE_STUCK=1", tb::test::mpirun(2));
  ASSERT_EQ(run.code, 0) << run.out;
  // From the first stuck finalize (the shim announces it), not from the job's start.
  const double after = tb::test::seconds_after_fault(run.out, run.ended_at);
  EXPECT_GE(after, 0) << "no stuck finalize announced\n" << run.out;
  EXPECT_LT(after, 20.0) << run.out;
  for (int rank = 0; rank < 2; ++rank) {
    const Trace t = rank_trace(name, rank);
    EXPECT_EQ(count(t, "ncclCommFinalize"), 1) << "rank " << rank;
    EXPECT_EQ(count(t, "ncclCommAbort"), 1) << "rank " << rank;
    EXPECT_EQ(count(t, "ncclCommDestroy"), 0) << "rank " << rank;
  }
}

// One GPU per task (srun --gpus-per-task=1): each rank sees a single GPU, its own, as
// device 0 — it runs there. Without the binding two ranks would share the node's one
// GPU: every rank refuses, at once, with the same message.
TEST(CudaDdpTrace, OneGpuPerTaskRunsTwoRanksOnOneGpuAreRefused) {
#if !TB_TRACE_DDP
  GTEST_SKIP() << "cuda-ddp is not built (needs MPI and NCCL)";
#endif
  const std::string args = "--backend cuda-ddp --samples 64 --batch 16 --epochs 1 --warmup 0 --reps 1 "
                           "--comm-timeout 30" + kClassify;
  const std::string name = "cuda-ddp-bound";
  const TracedRun bound = traced(name, args, 1, "TB_FAKE_BIND_PER_RANK=1", tb::test::mpirun(2));
  ASSERT_EQ(bound.code, 0) << bound.out;
  for (int rank = 0; rank < 2; ++rank) {
    const Trace t = rank_trace(name, rank);
    const std::string where = trace_path(name) + "." + std::to_string(rank) + ".log";
    ASSERT_FALSE(t.empty()) << where;
    EXPECT_NO_PROBLEMS_AT(where, check_all(t));
    for (const Call& c : t) {
      if (c.has("sdev")) {
        EXPECT_EQ(c.num("sdev"), 0) << "rank " << rank << ": " << c.line;
      }
    }
  }
  const TracedRun shared = traced("cuda-ddp-shared", args, 1, "", tb::test::mpirun(2));
  EXPECT_NE(shared.code, 0) << shared.out;
  EXPECT_NE(shared.out.find("ranks 0 and 1 would share one GPU on one node"), std::string::npos) << shared.out;
}

// A global batch of 1 row over 2 ranks: rank 1 holds and reads no row at all
// (harness/rank_data.h). With host placement it must not try to pin 0 bytes.
TEST(CudaDdpTrace, ARankHoldingNoRowsRunsWithHostPlacement) {
#if !TB_TRACE_DDP
  GTEST_SKIP() << "cuda-ddp is not built (needs MPI and NCCL)";
#endif
  const std::string name = "cuda-ddp-empty-rank";
  const TracedRun run = traced(name,
                               "--backend cuda-ddp --samples 9 --batch 1 --epochs 1 --warmup 0 --reps 1 "
                               "--data-placement host --comm-timeout 30" + kClassify,
                               2, "", tb::test::mpirun(2));
  ASSERT_EQ(run.code, 0) << run.out;
  for (int rank = 0; rank < 2; ++rank) {
    const Trace t = rank_trace(name, rank);
    const std::string where = trace_path(name) + "." + std::to_string(rank) + ".log";
    ASSERT_FALSE(t.empty()) << where;
    EXPECT_NO_PROBLEMS_AT(where, check_all(t));
  }
}

INSTANTIATE_TEST_SUITE_P(Trace, CudaDdp,
                         ::testing::Values(DdpCase{"overlap", "", true},
                                           DdpCase{"no_overlap_shuffled", " --no-overlap --shuffle", false}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
