// tests/cuda_trace/test_inventory_trace.cpp — the GPU inventory (harness/cuda_probe.cpp)
// under the fake CUDA runtime:
//   * no stray CUDA contexts: a run on GPU 1, and each rank of a cuda-ddp job, touches
//     only its own GPU — the inventory that availability(), make_trainer() and env.json
//     take before the GPU is picked makes no device current and reads no free memory
//     (cudaSetDevice / cudaMemGetInfo would open a context on GPU 0: ~300-500 MB there
//     per process).
#include <gtest/gtest.h>

#include <string>

#include "tests/cuda_trace/traced_run.h"

namespace {

using namespace tb::trace;

const std::string kShape = " --samples 64 --batch 32 --epochs 1 --warmup 0 --reps 1 ";

TEST(NoStrayContext, RunOnGpu1NeverTouchesGpu0) {
  const TracedRun run = traced("inventory-device1", "--backend cuda --device 1" + kClassify + kShape, 2);
  ASSERT_EQ(run.code, 0) << run.out;
  ASSERT_GT(count(run.trace, "cublasSgemm"), 0) << "the run did not train: " << run.path;
  const Problems p = check_one_device(run.trace, 1);
  EXPECT_TRUE(p.empty()) << p.size() << " problem(s) in " << run.path << ":\n" << report(p);
}

TEST(NoStrayContext, EachCudaDdpRankTouchesOnlyItsGpu) {
#if !TB_TRACE_DDP
  GTEST_SKIP() << "cuda-ddp is not built (needs MPI and NCCL)";
#endif
  const std::string name = "inventory-ddp";
  const TracedRun run = traced(name, "--backend cuda-ddp --comm-timeout 30" + kClassify + kShape, 2, "",
                               tb::test::mpirun(2));
  ASSERT_EQ(run.code, 0) << run.out;
  for (int rank = 0; rank < 2; ++rank) {
    const Trace t = rank_trace(name, rank);
    const std::string where = trace_path(name) + "." + std::to_string(rank) + ".log";
    ASSERT_GT(count(t, "ncclAllReduce"), 0) << "rank " << rank << " did not train: " << where;
    const Problems p = check_one_device(t, rank);
    EXPECT_TRUE(p.empty()) << p.size() << " problem(s) in " << where << ":\n" << report(p);
  }
}

}  // namespace
