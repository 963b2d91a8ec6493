// tests/cuda_trace/test_cuda_dp_trace.cpp — `cuda-dp`'s host-side call discipline
// from the trace of the real trainbench under the fake CUDA runtime (1 fake GPU for
// --devices 0,0, 2 for 0,1 / 1,0 / 0,0,1, 3 for 0,1,2), both replication modes, with
// NCCL, with peer copies (TB_DP_COMM=peer, or no peer access). Not numerics: nothing
// executes. Asserted for every run:
//   * every call naming a stream is made with that stream's device current, every
//     cuBLAS call with a handle created on the current device, every event recorded
//     on a stream of its device, every collective with communicator, stream and
//     current device agreeing (check_devices);
//   * the slots' streams are ordered by events wherever they share memory (no race in
//     the happens-before model), elapsed times read only after the host waited;
//     everything released at exit;
//   * the epoch design: no allocation and one host synchronisation per epoch;
//   * NCCL: one communicator set-up (ncclCommInitAll over the distinct GPUs) when the
//     run spans GPUs with peer access, none otherwise; collectives inside groups, one
//     per GPU; broadcast and reduce counts as each mode's design says.
// And a constructor failing at any of its allocations releases what it had acquired.
#include <gtest/gtest.h>

#include <set>

#include "tests/cuda_trace/traced_run.h"

namespace {

using namespace tb::trace;

struct DpCase {
  const char* name;
  std::string args;     // --devices, mode, workload extras
  int gpus;             // fake GPUs
  std::string env;      // e.g. TB_FAKE_NO_PEER=1
  int gpus_used;        // distinct GPUs in --devices
  bool nccl;            // whether a communicator is expected (NCCL built, > 1 GPU, peer access)
  bool persistent;
  int samples = 256, batch = 32;
};

void PrintTo(const DpCase& c, std::ostream* os) { *os << c.name; }  // test names stay stable

class CudaDp : public ::testing::TestWithParam<DpCase> {};

TEST_P(CudaDp, StreamsHandlesAndCommunicatorsFollowTheCurrentDevice) {
  const DpCase& k = GetParam();
  const int steps = (k.samples + k.batch - 1) / k.batch;
  const Plan plan{.warmup = 1, .reps = 1, .epochs = 2, .steps = steps};
  const std::string args = "--backend cuda-dp " + k.args + (k.persistent ? " --dp-mode persistent " : "") +
                           " --samples " + std::to_string(k.samples) + " --batch " + std::to_string(k.batch) +
                           " --epochs 2 --warmup 1 --reps 1";
  const TracedRun run = traced(std::string("cuda-dp-") + k.name, args, k.gpus, k.env);
  ASSERT_EQ(run.code, 0) << run.out;
  const Trace& t = run.trace;
  EXPECT_NO_PROBLEMS(check_all(t));
  EXPECT_NO_PROBLEMS(check_epochs(t, plan));

  // Not vacuous: GEMMs ran on every GPU the slots name, each with its own handle.
  std::set<int> gemm_devices;
  std::set<std::string> handles;
  for (const Call& c : t) {
    if (c.fn == "cublasSgemm") {
      gemm_devices.insert(c.dev);
      handles.insert(c.get("handle"));
    }
  }
  EXPECT_EQ(static_cast<int>(gemm_devices.size()), k.gpus_used);
  EXPECT_EQ(handles.size(), cublas_streams(t).size()) << "one handle per slot, each on its own stream";

  const int train_steps = plan.total_epochs() * plan.steps;
  const int set_params = 1 + plan.reps;  // before the warm-up and before each repetition
  int inits = 0, reduces = 0, broadcasts = 0;
  for (const Call& c : t) {
    if (c.fn == "ncclCommInitAll") {
      ++inits;
      EXPECT_EQ(c.num("ndev"), k.gpus_used) << c.line;
    }
    if (is_nccl_collective(c)) {
      EXPECT_GE(c.num("group"), 1) << "collective outside ncclGroupStart/End: " << c.line;
      reduces += c.fn == "ncclReduce";
      broadcasts += c.fn == "ncclBroadcast";
    }
  }
  EXPECT_EQ(inits, k.nccl ? 1 : 0);
  if (!k.nccl) {
    EXPECT_EQ(reduces + broadcasts, 0);
    if (k.gpus_used > 1) {
      EXPECT_GT(count(t, "cudaMemcpyPeerAsync"), 0) << "no NCCL: peer copies";
    }
  } else {
    // Full batches use every slot, so every GPU: one collective per GPU per step. A short
    // last batch that leaves a GPU idle goes through peer copies (or needs no reduction).
    const int nccl_steps = plan.total_epochs() * (k.samples / k.batch);
    EXPECT_EQ(reduces, k.gpus_used * nccl_steps);
    // faithful: replicate before every forward; persistent: to every slot (idle ones too)
    // after every update, and at each set_params.
    EXPECT_EQ(broadcasts, k.gpus_used * (k.persistent ? train_steps + set_params : nccl_steps));
  }
}

#if TB_TRACE_NCCL
constexpr bool kNccl = true;
#else
constexpr bool kNccl = false;
#endif

INSTANTIATE_TEST_SUITE_P(
    Trace, CudaDp,
    ::testing::Values(
        DpCase{"gpus01_faithful", "--devices 0,1" + kClassify, 2, "", 2, kNccl, false},
        DpCase{"gpus01_persistent_shuffled", "--devices 0,1 --shuffle" + kClassify, 2, "", 2, kNccl, true},
        DpCase{"gpu00_faithful", "--devices 0,0" + kClassify, 1, "", 1, false, false},
        DpCase{"gpu00_persistent_shuffled", "--devices 0,0 --shuffle" + kClassify, 1, "", 1, false, true},
        DpCase{"gpus01_no_peer_access_persistent", "--devices 0,1" + kClassify, 2, "TB_FAKE_NO_PEER=1", 2, false,
               true},
        DpCase{"gpus01_peer_copies_faithful", "--devices 0,1 --shuffle" + kClassify, 2, "TB_DP_COMM=peer", 2, false,
               false},
        DpCase{"gpus10_regression_tf32", "--devices 1,0 --precision tf32 --momentum 0.9" + kRegress, 2, "", 2, kNccl,
               false},
        // 8 rows in batches of 3 over slots on 3 GPUs: the last batch (2 rows) leaves GPU 2 idle.
        DpCase{"gpus012_short_batch_faithful", "--devices 0,1,2" + kClassify, 3, "", 3, kNccl, false, 8, 3},
        DpCase{"gpus012_short_batch_persistent", "--devices 0,1,2 --shuffle" + kClassify, 3, "", 3, kNccl, true, 8, 3},
        // Two slots on GPU 0, one on GPU 1 (a follower adds into its GPU's leader); 7 rows in
        // batches of 3: the last batch (1 row) runs on slot 0 alone.
        DpCase{"gpus001_followers_faithful", "--devices 0,0,1" + kClassify, 2, "", 2, kNccl, false, 7, 3},
        DpCase{"gpus001_followers_persistent", "--devices 0,0,1 --shuffle" + kClassify, 2, "", 2, kNccl, true, 7, 3}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(CudaDpTrace, ConstructorFailingAtAnyAllocationReleasesWhatItHeld) {
  const std::string args =
      "--backend cuda-dp --devices 0,1" + kClassify + " --samples 64 --batch 32 --epochs 1 --warmup 0 --reps 1";
  const TracedRun ok = traced("cuda-dp-oom", args, 2);
  ASSERT_EQ(ok.code, 0) << ok.out;
  const int allocations = count(ok.trace, "cudaMalloc");
  ASSERT_GT(allocations, 10);
  for (int k = 1; k <= allocations; ++k) {
    const TracedRun run = traced("cuda-dp-oom", args, 2, "TB_FAKE_MALLOC_FAIL_AT=" + std::to_string(k));
    SCOPED_TRACE("allocation " + std::to_string(k) + " fails");
    EXPECT_EQ(run.code, 1) << run.out;
    EXPECT_NE(run.out.find("out of device memory"), std::string::npos) << run.out;
    EXPECT_NO_PROBLEMS(check_released(run.trace));
    EXPECT_EQ(count(run.trace, "launch"), 0);
  }
}

}  // namespace
