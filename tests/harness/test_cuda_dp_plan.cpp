// tests/harness/test_dp_plan.cpp — cuda-dp's host logic without a GPU (harness/backends/cuda_dp_plan.h):
//  * chunk_plan against torch.chunk's rule: a table written by hand (including the
//    examples of torch.chunk's documentation), then a sweep against a second,
//    independently written construction;
//  * slot lists, availability and the leader/follower routes for shared GPUs;
//  * the gradient combination DataParallel relies on: per-chunk gradients scaled by
//    1/B (global rows), summed along the reduction route, equal the full-batch
//    gradient (MLP regression and classification, uneven chunks, B < G).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "datasets/shuffle.h"
#include "harness/backends/cpu_model.h"
#include "harness/backends/cuda_dp_plan.h"
#include "kernels/cpu/axpy.h"
#include "kernels/error.h"
#include "test_helpers.h"

namespace tb {
namespace {

std::vector<int64_t> sizes_of(const std::vector<Chunk>& chunks) {
  std::vector<int64_t> s;
  for (const Chunk& c : chunks) s.push_back(c.count);
  return s;
}

// torch.chunk(torch.arange(B), G) sizes, worked out by hand from "each chunk has
// ceil(B / G) rows, the last one what is left" (and from torch's documentation:
// arange(12).chunk(6) -> 6 x 2, arange(11).chunk(6) -> 5 x 2 + 1, arange(13).chunk(6) -> 4 x 3 + 1).
struct Case {
  int64_t rows;
  int slots;
  std::vector<int64_t> sizes;
};
const std::vector<Case> kTable = {
    {1, 1, {1}},
    {1, 4, {1}},                                // B = 1: one chunk, three idle slots
    {2, 4, {1, 1}},                             // B < G
    {3, 4, {1, 1, 1}},
    {4, 4, {1, 1, 1, 1}},
    {5, 4, {2, 2, 1}},                          // 3 chunks for 4 slots
    {6, 4, {2, 2, 2}},                          // 3 equal chunks for 4 slots
    {7, 4, {2, 2, 2, 1}},
    {8, 4, {2, 2, 2, 2}},
    {9, 4, {3, 3, 3}},
    {10, 4, {3, 3, 3, 1}},
    {5, 2, {3, 2}},
    {5, 3, {2, 2, 1}},
    {7, 3, {3, 3, 1}},
    {10, 3, {4, 4, 2}},
    {11, 5, {3, 3, 3, 2}},                      // B > G and still fewer chunks than slots
    {12, 5, {3, 3, 3, 3}},
    {11, 6, {2, 2, 2, 2, 2, 1}},
    {12, 6, {2, 2, 2, 2, 2, 2}},
    {13, 6, {3, 3, 3, 3, 1}},
    {3, 8, {1, 1, 1}},
    {9, 8, {2, 2, 2, 2, 1}},
    {13, 8, {2, 2, 2, 2, 2, 2, 1}},
    {17, 8, {3, 3, 3, 3, 3, 2}},
    {64, 3, {22, 22, 20}},
    {100, 7, {15, 15, 15, 15, 15, 15, 10}},
    {256, 2, {128, 128}},
    {1003 % 64, 3, {15, 15, 13}},               // the short last batch of 1003 rows in batches of 64
};

TEST(DpPlan, ChunkPlanMatchesTorchChunkOnAHandWrittenTable) {
  ASSERT_GE(kTable.size(), 20u);
  for (const Case& c : kTable) {
    const std::vector<Chunk> p = chunk_plan(c.rows, c.slots);
    EXPECT_EQ(sizes_of(p), c.sizes) << "B=" << c.rows << " G=" << c.slots;
    int64_t next = 0;
    for (const Chunk& k : p) {
      EXPECT_EQ(k.begin, next) << "B=" << c.rows << " G=" << c.slots;  // contiguous, in order
      next += k.count;
    }
    EXPECT_EQ(next, c.rows);
  }
}

// A second construction of torch.chunk, written without chunk_plan's formula: the
// chunk size is the smallest c with c * G >= B (found by counting up), then rows are
// dealt out c at a time until none are left.
std::vector<int64_t> torch_chunk_sizes(int64_t rows, int slots) {
  std::vector<int64_t> sizes;
  if (rows == 0) return sizes;
  int64_t c = 1;
  while (c * slots < rows) ++c;
  for (int64_t left = rows; left > 0; left -= c) sizes.push_back(left < c ? left : c);
  return sizes;
}

TEST(DpPlan, ChunkPlanMatchesAnIndependentConstructionOnASweep) {
  int cases = 0, fewer = 0;
  for (int64_t rows = 0; rows <= 300; ++rows) {
    for (int slots = 1; slots <= 16; ++slots) {
      const std::vector<Chunk> p = chunk_plan(rows, slots);
      const std::vector<int64_t> want = torch_chunk_sizes(rows, slots);
      ASSERT_EQ(sizes_of(p), want) << "B=" << rows << " G=" << slots;
      ASSERT_LE(p.size(), static_cast<size_t>(slots));
      if (!p.empty()) {
        EXPECT_EQ(p.front().count, max_chunk_rows(rows, slots));
        EXPECT_EQ(p.back().begin + p.back().count, rows);
      }
      fewer += rows > 0 && p.size() < static_cast<size_t>(slots);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 301 * 16);
  EXPECT_GT(fewer, 100);  // the sweep does exercise "fewer chunks than slots"
}

TEST(DpPlan, ChunkPlanRejectsNoSlotsAndNegativeRows) {
  EXPECT_THROW(chunk_plan(4, 0), Error);
  EXPECT_THROW(chunk_plan(-1, 2), Error);
  EXPECT_TRUE(chunk_plan(0, 3).empty());
}

TEST(DpPlan, SlotListsDistinctDevicesAndSharing) {
  EXPECT_EQ(distinct_devices({0, 0, 1, 0, 2, 1}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(distinct_devices({1, 0}), (std::vector<int>{1, 0}));
  EXPECT_TRUE(shares_device({0, 0}));
  EXPECT_TRUE(shares_device({0, 1, 1}));
  EXPECT_FALSE(shares_device({0, 1, 2, 3}));
  EXPECT_FALSE(shares_device({3}));
  EXPECT_EQ(slot_list({0, 1}), "0,1");
  EXPECT_EQ(slot_list({0, 0, 0}), "0,0,0");
  EXPECT_EQ(slot_list({2}), "2");
}

TEST(DpPlan, AvailabilityNeedsTwoGpusUnlessSlotsAreNamed) {
  EXPECT_EQ(dp_unavailable_reason(0, {}), "needs 2 GPUs, found 0");
  EXPECT_EQ(dp_unavailable_reason(1, {}), "needs 2 GPUs, found 1");
  EXPECT_EQ(dp_unavailable_reason(2, {}), "");
  EXPECT_EQ(dp_unavailable_reason(1, {0, 0}), "");  // logical slots on one GPU
  EXPECT_EQ(dp_unavailable_reason(1, {0}), "");
  EXPECT_EQ(dp_unavailable_reason(1, {0, 1}), "--devices: 1 is not a visible GPU (found 1)");
  EXPECT_EQ(dp_unavailable_reason(0, {0, 0}), "--devices: 0 is not a visible GPU (found 0)");
  EXPECT_NE(dp_unavailable_reason(4, {0, -1}), "");
  EXPECT_EQ(resolve_slots({}, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(resolve_slots({1, 1, 0}, 2), (std::vector<int>{1, 1, 0}));
  try {
    resolve_slots({}, 1);
    FAIL() << "expected needs 2 GPUs";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "needs 2 GPUs, found 1");
  }
}

TEST(DpPlan, RoutesGoThroughOneLeaderPerGpu) {
  // Slots 0,0,1,1,0 all used: GPU 0 led by slot 0 (followers 1, 4), GPU 1 by slot 2 (follower 3).
  DpRoute r = dp_route({0, 0, 1, 1, 0}, 5);
  EXPECT_EQ(r.leader, (std::vector<int>{0, 0, 2, 2, 0}));
  EXPECT_EQ(r.remote_leaders, (std::vector<int>{2}));
  EXPECT_EQ(r.followers, (std::vector<int>{1, 3, 4}));
  EXPECT_TRUE(r.all_devices);
  // Only the first two used (a short batch): GPU 1 idles.
  r = dp_route({0, 0, 1, 1, 0}, 2);
  EXPECT_EQ(r.leader, (std::vector<int>{0, 0}));
  EXPECT_TRUE(r.remote_leaders.empty());
  EXPECT_FALSE(r.all_devices);
  // Distinct GPUs: everyone leads; slot 0's GPU need not be GPU 0.
  r = dp_route({2, 0, 1}, 3);
  EXPECT_EQ(r.remote_leaders, (std::vector<int>{1, 2}));
  EXPECT_TRUE(r.followers.empty());
  EXPECT_THROW(dp_route({0, 1}, 0), Error);
  EXPECT_THROW(dp_route({0, 1}, 3), Error);

  EXPECT_TRUE(nccl_step({0, 1}, 2));
  EXPECT_FALSE(nccl_step({0, 1}, 1));            // GPU 1 idle this step: peer copies
  EXPECT_FALSE(nccl_step({0, 0, 0}, 3));         // one GPU: nothing to communicate
  EXPECT_TRUE(nccl_step({0, 0, 1, 1}, 3));       // slot 3 idle but GPU 1 still takes part
  EXPECT_FALSE(nccl_step({0, 0, 1, 1}, 2));
}

// Every used slot's gradient reaches slot 0 exactly once along the route.
TEST(DpPlan, TheReductionRouteCountsEverySlotOnce) {
  for (const std::vector<int>& slots : std::vector<std::vector<int>>{
           {0, 1}, {0, 0}, {0, 0, 0}, {0, 1, 0, 1}, {1, 0, 1, 2, 2, 0}, {3, 3, 3, 1}}) {
    for (int used = 1; used <= static_cast<int>(slots.size()); ++used) {
      const DpRoute r = dp_route(slots, used);
      std::vector<int> acc(static_cast<size_t>(used), 1);  // contributions each slot holds
      for (int f : r.followers) {
        const int l = r.leader[static_cast<size_t>(f)];
        EXPECT_LT(l, f);
        EXPECT_EQ(slots[static_cast<size_t>(l)], slots[static_cast<size_t>(f)]);  // an add on one GPU
        acc[static_cast<size_t>(l)] += acc[static_cast<size_t>(f)];
      }
      for (int l : r.remote_leaders) {
        EXPECT_NE(slots[static_cast<size_t>(l)], slots[0]);
        acc[0] += acc[static_cast<size_t>(l)];
      }
      EXPECT_EQ(acc[0], used) << slot_list(slots) << " used " << used;
    }
  }
}

// ---- the gradient combination, on the CPU kernels ----------------------------------------

// Gradient of the mean loss over rows order[0..B) in one pass (the full batch).
std::vector<float> full_batch_grad(CpuModel& m, const std::vector<int64_t>& order, int64_t B) {
  const BatchView b = m.load_batch(order.data(), B);
  m.forward(b.x, B);
  m.loss(b, B, B, true, nullptr);
  m.backward(b.x, B);
  return m.grads();
}

// DataParallel: chunk k of torch.chunk(B, G) on slot k (slots may share a GPU),
// dZ scaled by 1/B, then summed along dp_route with the CPU twin of the add kernel.
// scale_rows_of_chunk: the wrong scaling (each chunk's own mean), for the control.
std::vector<float> data_parallel_grad(CpuModel& m, const std::vector<int64_t>& order, int64_t B,
                                      const std::vector<int>& slots, bool scale_rows_of_chunk = false) {
  const std::vector<Chunk> chunks = chunk_plan(B, static_cast<int>(slots.size()));
  std::vector<std::vector<float>> g;
  for (const Chunk& c : chunks) {
    const BatchView b = m.load_batch(order.data() + c.begin, c.count);
    m.forward(b.x, c.count);
    m.loss(b, c.count, scale_rows_of_chunk ? c.count : B, true, nullptr);
    m.backward(b.x, c.count);
    g.push_back(m.grads());
  }
  const DpRoute r = dp_route(slots, static_cast<int>(chunks.size()));
  const int64_t n = static_cast<int64_t>(g[0].size());
  for (int f : r.followers) cpu::add_inplace(g[static_cast<size_t>(r.leader[f])].data(), g[f].data(), n);
  for (int l : r.remote_leaders) cpu::add_inplace(g[0].data(), g[static_cast<size_t>(l)].data(), n);
  return g[0];
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::abs(double(x)));
  return m;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - double(b[i])));
  return m;
}

TEST(DpPlan, ChunkGradientsScaledByTheGlobalBatchSumToTheFullBatchGradient) {
  struct Setup {
    Task task;
    std::vector<int64_t> layers;
  };
  const std::vector<Setup> setups = {{Task::kRegression, {6, 9, 7, 3}}, {Task::kClassification, {6, 11, 4}}};
  // (B, slots): uneven chunks, fewer chunks than slots, B < G, B = 1, shared GPUs.
  const std::vector<std::pair<int64_t, std::vector<int>>> splits = {
      {23, {0, 1, 2, 3}},  // 6,6,6,5
      {10, {0, 1, 2}},     // 4,4,2
      {5, {0, 0, 0, 0}},   // 2,2,1 on one GPU: three chunks added by the kernel
      {9, {0, 1, 0, 1}},   // 3,3,3: one follower add, one remote leader
      {3, {0, 1, 2, 3, 4, 5, 6, 7}},
      {1, {0, 1}},
  };
  for (const Setup& s : setups) {
    const Dataset data = test::synthetic(s.task, 40, 6, s.layers.back(), 7);
    CpuModel m(test::model(s.layers, s.task), data, 40);
    m.params() = init_params(test::model(s.layers, s.task), 5);
    std::vector<int64_t> order;
    epoch_order(11, 0, data.n, /*shuffle=*/true, &order);  // chunks gather scattered rows
    for (const auto& [B, slots] : splits) {
      const std::vector<float> full = full_batch_grad(m, order, B);
      const std::vector<float> dp = data_parallel_grad(m, order, B, slots);
      // float32: the chunked sums group the B per-row terms differently (at most B
      // terms per entry), so entries agree to a few ulps of the largest gradient.
      const double tol = 1e-5 * std::max(max_abs(full), 1e-3);
      EXPECT_LE(max_abs_diff(dp, full), tol) << "task " << int(s.task) << " B=" << B << " slots " << slot_list(slots);
      if (chunk_plan(B, static_cast<int>(slots.size())).size() > 1) {
        // Control: scaling each chunk by its own row count (the per-replica mean) is wrong.
        const std::vector<float> wrong = data_parallel_grad(m, order, B, slots, true);
        EXPECT_GT(max_abs_diff(wrong, full), 100 * tol) << "B=" << B;
      }
    }
  }
}

}  // namespace
}  // namespace tb
