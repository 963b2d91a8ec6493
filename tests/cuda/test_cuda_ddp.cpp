// tests/cuda/test_cuda_ddp.cpp — cuda-ddp through real mpirun jobs, one rank per
// GPU: at every world size the GPUs allow (1 always, 2 and 4 when present) it learns
// what `cuda` and `reference` learn, bucket size and overlap do not change the
// result, and a rank that hangs ends the job within the watchdog deadline. Skipped,
// with the reason, where no GPU is usable or the build lacks NCCL/MPI.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/backend.h"
#include "harness/csv_writer.h"
#include "harness/host_info.h"
#include "harness/mpi_launch.h"
#include "harness/params_file.h"
#include "tests/cuda/gpu_gate.h"
#include "tests/shell.h"

namespace {

namespace fs = std::filesystem;
using Result = tb::test::ShellResult;
const auto& sh = tb::test::shell;

using tb::test::mpirun;

class CudaDdp : public ::testing::Test {
 protected:
  void SetUp() override {
    TB_GPU_TEST_GATE();
    const tb::GpuInventory g = tb::gpu_inventory(tb::FreeMemory::kNotRead);
    const tb::Backend* b = tb::find_backend("cuda-ddp");
    if (!b || !b->availability().ok) GTEST_SKIP() << "cuda-ddp unavailable: " << b->availability().reason;
    gpus_ = static_cast<int>(g.gpus.size());
  }
  int gpus_ = 0;
};

const std::string kWorkload =
    " --model mlp --layers 24,40,17,5 --samples 1003 --batch 64 --epochs 2 --warmup 0 --reps 1 --lr 0.2 "
    "--momentum 0.5 --shuffle --comm-timeout 5";

std::vector<float> train(const std::string& prefix, const std::string& backend, const std::string& extra,
                         const std::string& name, const std::string& workload = kWorkload) {
  const std::string params = (fs::path(TB_TEST_TMPDIR) / (name + ".params")).string();
  fs::remove(params);
  // extra may override the workload's flags (ShardEdgeCasesMatchReference: --samples, --batch).
  const Result r = sh(prefix + TB_TRAINBENCH_EXE + " run --backend " + backend + tb::test::with_flags(workload, extra) +
                      " --save-params " + params);
  EXPECT_EQ(r.code, 0) << r.out;
  return r.code == 0 ? tb::read_params_file(params) : std::vector<float>{};
}

double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    m = std::max(m, std::abs(double(a[i]) - b[i]) / (std::abs(double(b[i])) + 1e-2));
  }
  return a.size() == b.size() ? m : 1e9;
}

TEST_F(CudaDdp, MatchesCudaAndReferenceAtEveryWorldSizeTheGpusAllow) {
  const std::vector<float> ref = train("", "reference", "", "cddp-ref");
  const std::vector<float> one = train("", "cuda", "", "cddp-cuda");
  for (int np : {1, 2, 4}) {
    if (np > gpus_) continue;
    const std::vector<float> ddp = train(mpirun(np), "cuda-ddp", "", "cddp" + std::to_string(np));
    EXPECT_LT(max_rel(ddp, one), 1e-4) << "np " << np << " vs cuda";
    EXPECT_LT(max_rel(ddp, ref), 2e-4) << "np " << np << " vs reference";
  }
}

// Linear regression takes the fused one-pass step (kernels/cuda/linear_step.h) on every
// rank, its one layer handed to the reducer after it: the same parameters as `cuda` and
// `reference`, at the tolerances above.
TEST_F(CudaDdp, FusedLinearStepMatchesCudaAndReference) {
  const std::string linear =
      " --model linear --layers 24,3 --dataset synthetic-regression --samples 1003 --batch 64 --epochs 2 "
      "--warmup 0 --reps 1 --lr 0.05 --momentum 0.5 --shuffle --comm-timeout 5";
  const std::vector<float> ref = train("", "reference", "", "cddp-lin-ref", linear);
  const std::vector<float> one = train("", "cuda", "", "cddp-lin-cuda", linear);
  for (int np : {1, 2, 4}) {
    if (np > gpus_) continue;
    const std::vector<float> ddp = train(mpirun(np), "cuda-ddp", "", "cddp-lin" + std::to_string(np), linear);
    EXPECT_LT(max_rel(ddp, one), 1e-4) << "np " << np << " vs cuda";
    EXPECT_LT(max_rel(ddp, ref), 2e-4) << "np " << np << " vs reference";
  }
}

// A non-finite loss on one rank (TB_FAULT kind=nan, from step 3 on) reaches every rank
// through the epoch's loss all-reduce: all stop at the same step, and rank 0 writes one
// failed row naming it — a collective failure, not a crash.
TEST_F(CudaDdp, ANonFiniteLossOnOneRankStopsEveryRankAtTheSameStep) {
  if (gpus_ < 2) GTEST_SKIP() << "needs 2 GPUs, found " << gpus_;
  const std::string csv = (fs::path(TB_TEST_TMPDIR) / "cddp-nan.csv").string();
  fs::remove(csv);
  const Result r = sh("TB_FAULT=rank=1,step=3,kind=nan timeout 120 " + mpirun(2) + TB_TRAINBENCH_EXE +
                      " run --backend cuda-ddp" + kWorkload + " --out " + csv);
  EXPECT_EQ(r.code, 1) << r.out;
  // Timed from the fault (the rank announces it), not from the start: the 120 s is a hang guard.
  const double after = tb::test::seconds_after_fault(r);
  EXPECT_GE(after, 0) << "no fault announced\n" << r.out;
  EXPECT_LT(after, 30.0) << r.out;
  std::ifstream in(csv);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("failed: non-finite loss at epoch 1 step 3"), std::string::npos) << text.str();
}

// Rank 0 writes the row; its devices column names every rank's GPU, in rank order.
TEST_F(CudaDdp, TheRowNamesEveryRanksGpu) {
  if (gpus_ < 2) GTEST_SKIP() << "needs 2 GPUs, found " << gpus_;
  const std::string csv = (fs::path(TB_TEST_TMPDIR) / "cddp-devices.csv").string();
  fs::remove(csv);
  const Result r = sh(mpirun(2) + TB_TRAINBENCH_EXE + " run --backend cuda-ddp" + kWorkload + " --out " + csv);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(csv);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const std::vector<std::string> h = tb::csv_fields(header), f = tb::csv_fields(row);
  const size_t col = static_cast<size_t>(std::find(h.begin(), h.end(), "devices") - h.begin());
  ASSERT_LT(col, f.size()) << header << "\n" << row;
  EXPECT_EQ(f[col], "0,1") << row;
}

// Edge cases of the shards at 2 and 3 ranks, each against reference: a global batch
// smaller than the world (a rank holds no rows and contributes zeros), batches of one
// row, a one-row last batch, one batch of the whole data set, host placement.
TEST_F(CudaDdp, ShardEdgeCasesMatchReference) {
  const std::vector<std::string> cases = {
      "--samples 7 --batch 2",                            // 3 ranks: rank 2 holds nothing
      "--samples 9 --batch 1",                            // one row per step: all but one rank idle
      "--samples 65 --batch 16",                          // a last batch of one row
      "--samples 30 --batch 30",                          // one batch: the whole data set
      "--samples 40 --batch 8 | --data-placement host",   // staged from pinned host memory
  };
  int k = 0;
  for (const std::string& c : cases) {
    // Left of '|': the workload; right of it: knobs for cuda-ddp only (reference does not
    // honour --data-placement: it would be a skipped row).
    const std::string extra = c.substr(0, c.find('|'));
    const std::string ddp_extra = c.find('|') == std::string::npos ? extra : extra + c.substr(c.find('|') + 1);
    const std::vector<float> ref = train("", "reference", extra, "cddp-edge-ref" + std::to_string(k));
    for (int np : {2, 3}) {
      if (np > gpus_) continue;
      const std::vector<float> ddp = train(mpirun(np), "cuda-ddp", ddp_extra,
                                           "cddp-edge" + std::to_string(k) + "-" + std::to_string(np));
      EXPECT_LT(max_rel(ddp, ref), 2e-4) << extra << " at np " << np;
    }
    ++k;
  }
}

TEST_F(CudaDdp, BucketSizeAndOverlapDoNotChangeTheResult) {
  const int np = gpus_ >= 2 ? 2 : 1;
  const std::vector<float> base = train(mpirun(np), "cuda-ddp", "", "cddp-b");
  for (const char* extra : {"--bucket-mb 0.000001", "--no-overlap"}) {
    EXPECT_EQ(train(mpirun(np), "cuda-ddp", extra, "cddp-b2"), base) << extra;  // same sums, same order
  }
}

TEST_F(CudaDdp, AHungRankEndsTheJobWithinTheDeadline) {
  if (gpus_ < 2) GTEST_SKIP() << "needs 2 GPUs, found " << gpus_;
  const Result r = sh("TB_FAULT=rank=1,step=3,kind=hang timeout 120 " + mpirun(2) + TB_TRAINBENCH_EXE +
                      " run --backend cuda-ddp" + tb::test::with_flags(kWorkload, "--comm-timeout 3"));
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.code, 124) << "hang guard: the job ran 120 s\n" << r.out;
  const double after = tb::test::seconds_after_fault(r);  // from the fault, not the job's start
  EXPECT_GE(after, 0) << "no fault announced\n" << r.out;
  EXPECT_LT(after, 20.0) << r.out;
}

}  // namespace
