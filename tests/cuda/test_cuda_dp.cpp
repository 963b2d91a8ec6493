// tests/cuda/test_cuda_dp.cpp — `cuda-dp` (torch.nn.DataParallel semantics) and its
// add kernel. On any GPU: tb::cuda::add_inplace equals its CPU twin bitwise; logical
// slots on one GPU (0,0 and 0,0,0) learn what `reference` and `cuda` learn, shuffled
// or not, for both tasks, with a short last batch; uneven chunks and fewer chunks
// than slots (B < G) too; faithful and persistent replication give bitwise the same
// parameters. With two or more GPUs: the same on real GPUs, through NCCL and through
// peer copies (TB_DP_COMM=peer), and mixed slot lists (0,1,0,1). GPU tests skip with
// the reason where no GPU (or not enough) is usable; the flag checks need none.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "datasets/shuffle.h"
#include "harness/backend.h"
#include "harness/host_info.h"
#include "kernels/cpu/axpy.h"
#include "kernels/cuda/axpy.h"
#include "kernels/cuda/device_buffer.h"
#include "tests/cuda/gpu_gate.h"
#include "tests/cuda/gpu_train.h"
#include "tests/harness/test_helpers.h"

namespace tb {
namespace {

using test::max_rel_err;

class CudaDp : public ::testing::Test {
 protected:
  void SetUp() override {
    TB_GPU_TEST_GATE();
    const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
    gpus_ = static_cast<int>(g.gpus.size());
  }
  int gpus_ = 0;
};

using test::expect_close;
using test::train;
using test::Trained;

RunConfig options(std::vector<int64_t> layers, Task task, int64_t batch, std::vector<int> slots) {
  RunConfig o;
  o.model = test::model(std::move(layers), task);
  o.batch = batch;
  o.lr = task == Task::kRegression ? 0.05 : 0.2;
  o.momentum = 0.9;
  o.dp_devices = std::move(slots);
  return o;
}

std::string slots_text(const std::vector<int>& s) {
  std::string t;
  for (int d : s) t += (t.empty() ? "" : ",") + std::to_string(d);
  return t;
}

// ---- no GPU needed -------------------------------------------------------------------------

// Knobs cuda-dp does not honour are refused by name before any GPU is touched
// (the runner turns the answer into a `skipped:` row).
TEST(CudaDpFlags, HostPlacementAndCudaGraphAreRefusedByName) {
  RunConfig c;
  c.backend = "cuda-dp";
  c.dp_devices = {0, 0};
  c.data_placement = "host";
  EXPECT_EQ(find_backend("cuda-dp")->unsupported(c).rfind("--data-placement host does not apply to cuda-dp", 0), 0u)
      << find_backend("cuda-dp")->unsupported(c);
  c.data_placement = "device";
  c.cuda_graph = true;
  EXPECT_EQ(find_backend("cuda-dp")->unsupported(c).rfind("--cuda-graph does not apply to cuda-dp", 0), 0u)
      << find_backend("cuda-dp")->unsupported(c);
}

TEST(CudaDpFlags, AvailabilityNamesWhatIsMissing) {
  const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
  const Availability a = find_backend("cuda-dp")->availability();
  if (!g.usable) {
    EXPECT_FALSE(a.ok);
    EXPECT_EQ(a.reason, "needs 2 GPUs, found 0: " + g.reason);
  } else if (g.gpus.size() < 2) {
    EXPECT_FALSE(a.ok);
    EXPECT_EQ(a.reason, "needs 2 GPUs, found 1");
  } else {
    EXPECT_TRUE(a.ok) << a.reason;
  }
  const Dataset data = test::synthetic(Task::kRegression, 64, 8, 1);
  const RunConfig opt = options({8, 1}, Task::kRegression, 16, {0, 999});
  try {
    find_backend("cuda-dp")->make_trainer(data, opt);
    FAIL() << "expected slot 999 to be refused";
  } catch (const Error& e) {
    const std::string want = g.usable ? "--devices: 999 is not a visible GPU" : g.reason;
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
}

// ---- one GPU, logical slots ----------------------------------------------------------------

TEST_F(CudaDp, AddInplaceEqualsTheCpuTwinBitwise) {
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{3} << 20}) {
    std::vector<float> dst(static_cast<size_t>(n)), src(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      dst[static_cast<size_t>(i)] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
      src[static_cast<size_t>(i)] = std::cos(0.11f * static_cast<float>(i)) / 7.0f;
    }
    cuda::DeviceBuffer<float> d(dst, nullptr), s(src, nullptr);  // the legacy stream, as the kernel below
    cuda::add_inplace(d.get(), s.get(), n, nullptr);
    cpu::add_inplace(dst.data(), src.data(), n);
    EXPECT_EQ(d.download(), dst) << "n " << n;
  }
}

TEST_F(CudaDp, LogicalSlotsOnOneGpuMatchReferenceAndCuda) {
  for (Task task : {Task::kRegression, Task::kClassification}) {
    const std::vector<int64_t> layers = {24, 40, 17, task == Task::kRegression ? 3 : 5};
    const Dataset data = test::synthetic(task, 1003, 24, layers.back(), 5);
    // 1003 = 15 x 64 + 43: chunks 32,32 / 22,22,20 and a short last batch 22,21 / 15,15,13.
    for (bool shuffle : {false, true}) {
      const RunConfig base = options(layers, task, 64, {});
      const Trained ref = train("reference", data, base, 3, shuffle);
      const Trained one = train("cuda", data, base, 3, shuffle);
      for (const std::vector<int>& slots : {std::vector<int>{0, 0}, std::vector<int>{0, 0, 0}}) {
        const Trained dp = train("cuda-dp", data, options(layers, task, 64, slots), 3, shuffle);
        const std::string what = "slots " + slots_text(slots) + " task " + std::to_string(int(task)) +
                                 " shuffle " + std::to_string(shuffle);
        expect_close(dp, ref, data, what + " vs reference");
        expect_close(dp, one, data, what + " vs cuda");
      }
    }
  }
}

TEST_F(CudaDp, UnevenChunksAndFewerChunksThanSlots) {
  struct Case {
    int64_t n, batch;
    std::vector<int> slots;
  };
  // B=5 on 4 slots: 2,2,1 (slot 3 idles), last batch 3 -> 1,1,1. B=3 on 5 slots: 1,1,1
  // (B < G), last batch 2 -> 1,1. B=7 on 3: 3,3,1.
  for (const Case& c : {Case{53, 5, {0, 0, 0, 0}}, Case{50, 3, {0, 0, 0, 0, 0}}, Case{71, 7, {0, 0, 0}}}) {
    for (Task task : {Task::kRegression, Task::kClassification}) {
      const std::vector<int64_t> layers = {6, 9, task == Task::kRegression ? 2 : 4};
      const Dataset data = test::synthetic(task, c.n, 6, layers.back(), 9);
      RunConfig opt = options(layers, task, c.batch, c.slots);
      const Trained ref = train("reference", data, opt, 2, true);
      for (bool persistent : {false, true}) {
        opt.dp_mode = (persistent) ? "persistent" : "faithful";
        const Trained dp = train("cuda-dp", data, opt, 2, true);
        expect_close(dp, ref, data,
                     "B=" + std::to_string(c.batch) + " slots " + slots_text(c.slots) + " persistent " +
                         std::to_string(persistent));
      }
    }
  }
}

TEST_F(CudaDp, FaithfulAndPersistentGiveBitwiseTheSameParameters) {
  std::vector<std::vector<int>> lists = {{0, 0}, {0, 0, 0}};
  if (gpus_ >= 2) lists.push_back({0, 1});
  if (gpus_ >= 2) lists.push_back({0, 1, 0, 1});
  const Dataset data = test::synthetic(Task::kClassification, 1003, 24, 5, 5);
  for (const std::vector<int>& slots : lists) {
    RunConfig opt = options({24, 40, 5}, Task::kClassification, 64, slots);
    opt.dp_mode = (false) ? "persistent" : "faithful";
    const Trained faithful = train("cuda-dp", data, opt, 2, true);
    opt.dp_mode = (true) ? "persistent" : "faithful";
    const Trained persistent = train("cuda-dp", data, opt, 2, true);
    EXPECT_EQ(faithful.params, persistent.params) << "slots " << slots_text(slots);
  }
}

TEST_F(CudaDp, ReportsSlotsWorldSizeMemoryAndEveryPhase) {
  const Dataset data = test::synthetic(Task::kRegression, 512, 16, 2);
  for (bool persistent : {false, true}) {
    RunConfig opt = options({16, 32, 2}, Task::kRegression, 64, {0, 0, 0});
    opt.dp_mode = (persistent) ? "persistent" : "faithful";
    std::unique_ptr<Trainer> t = find_backend("cuda-dp")->make_trainer(data, opt);
    EXPECT_EQ(t->devices(), "0,0,0");
    EXPECT_EQ(t->replicas(), 3);
    EXPECT_GT(t->peak_device_mem_bytes(), 0);
    const Trained r = train("cuda-dp", data, opt, 1, true);
    EXPECT_GT(r.phases.transfer_s, 0);  // batch gather, replication, scatter/gather copies
    EXPECT_GT(r.phases.forward_s, 0);
    EXPECT_GT(r.phases.backward_s, 0);
    EXPECT_GT(r.phases.comm_s, 0);  // the add kernels of the shared slots
    EXPECT_GT(r.phases.optimizer_s, 0);
  }
}

// ---- several GPUs ----------------------------------------------------------------------------

TEST_F(CudaDp, RealGpusMatchReferenceThroughNcclAndPeerCopies) {
  if (gpus_ < 2) GTEST_SKIP() << "needs 2 GPUs, found " << gpus_;
  std::vector<int> all;
  for (int i = 0; i < gpus_; ++i) all.push_back(i);
  const std::vector<std::vector<int>> lists = {{0, 1}, all, {0, 1, 0, 1}, {1, 0}};
  for (Task task : {Task::kRegression, Task::kClassification}) {
    const std::vector<int64_t> layers = {24, 40, 17, task == Task::kRegression ? 3 : 5};
    const Dataset data = test::synthetic(task, 1003, 24, layers.back(), 5);
    const Trained ref = train("reference", data, options(layers, task, 64, {}), 2, true);
    for (const std::vector<int>& slots : lists) {
      for (const char* path : {"nccl", "peer"}) {
        ::setenv("TB_DP_COMM", path, 1);
        const Trained dp = train("cuda-dp", data, options(layers, task, 64, slots), 2, true);
        expect_close(dp, ref, data, "slots " + slots_text(slots) + " via " + path);
      }
      ::unsetenv("TB_DP_COMM");
    }
    // A batch smaller than the GPU count leaves GPUs idle: those steps use peer copies.
    if (gpus_ > 2) {
      RunConfig opt = options(layers, task, 2, all);
      const Trained small_ref = train("reference", data, options(layers, task, 2, {}), 1, true);
      expect_close(train("cuda-dp", data, opt, 1, true), small_ref, data, "B=2 on all GPUs");
    }
  }
  const std::vector<int> two = {0, 1};
  const Dataset data = test::synthetic(Task::kRegression, 64, 8, 1);
  EXPECT_EQ(find_backend("cuda-dp")->make_trainer(data, options({8, 1}, Task::kRegression, 16, two))->devices(),
            "0,1");
}

}  // namespace
}  // namespace tb
