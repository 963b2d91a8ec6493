// tests/harness/test_ddp_plan.cpp — shard split and gradient buckets (no MPI needed).
#include <gtest/gtest.h>

#include "harness/ddp_plan.h"

namespace tb {
namespace {

TEST(DdpPlan, ShardsCoverTheBatchOnceWithSizesDifferingByAtMostOne) {
  for (int64_t rows : {1, 2, 3, 7, 64, 100, 1023}) {
    for (int world : {1, 2, 3, 4, 8}) {
      int64_t next = 0, lo = rows, hi = 0;
      for (int r = 0; r < world; ++r) {
        const Shard s = shard_of(rows, r, world);
        EXPECT_EQ(s.begin, next) << rows << "/" << world;
        next = s.end;
        lo = std::min(lo, s.end - s.begin);
        hi = std::max(hi, s.end - s.begin);
      }
      EXPECT_EQ(next, rows);
      EXPECT_LE(hi - lo, 1);
    }
  }
  EXPECT_EQ(shard_of(2, 3, 4).end - shard_of(2, 3, 4).begin, 0);  // fewer rows than ranks
}

ModelSpec mlp(std::vector<int64_t> layers) {
  ModelSpec m;
  m.kind = ModelKind::kMlp;
  m.layers = std::move(layers);
  return m;
}

TEST(DdpPlan, BucketsAreWholeLayersInReverseOrderCoveringEverything) {
  const ParamLayout lay = make_layout(mlp({10, 20, 30, 5}));  // layers of 220, 630, 155 floats
  for (int64_t bytes : {int64_t{0}, int64_t{4}, int64_t{700 * 4}, int64_t{25} << 20}) {
    const std::vector<Bucket> b = plan_buckets(lay, bytes);
    ASSERT_FALSE(b.empty());
    int64_t end = lay.total;
    int expect_layer = 2;
    for (const Bucket& k : b) {
      EXPECT_EQ(k.offset + k.count, end);  // contiguous, from the end of the buffer down
      EXPECT_EQ(k.last_layer, expect_layer);
      EXPECT_EQ(k.offset, lay.layers[k.first_layer].w_offset);
      end = k.offset;
      expect_layer = k.first_layer - 1;
    }
    EXPECT_EQ(end, 0);
  }
  EXPECT_EQ(plan_buckets(lay, 0).size(), 3u);              // one per layer
  EXPECT_EQ(plan_buckets(lay, int64_t{25} << 20).size(), 1u);  // all in one
  const std::vector<Bucket> two = plan_buckets(lay, 700 * 4);  // 155+630 >= 700, then 220
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].first_layer, 1);
  EXPECT_EQ(two[1].first_layer, 0);
}

TEST(DdpPlan, CudaDdpNeedsOneGpuPerRankOnTheNode) {
  EXPECT_EQ(one_gpu_per_rank_shortfall(8, 8), "");
  EXPECT_EQ(one_gpu_per_rank_shortfall(2, 1), "");
  EXPECT_EQ(one_gpu_per_rank_shortfall(1, 2),
            "needs 2 GPUs on this node, one per rank (found 1; two NCCL ranks on one GPU are not supported)");
  EXPECT_NE(one_gpu_per_rank_shortfall(4, 8).find("needs 8 GPUs"), std::string::npos);
}

TEST(DdpPlan, RankDevicesListEveryRanksGpuAndNodesWhenThereAreSeveral) {
  EXPECT_EQ(rank_devices({0}, {7}), "0");
  EXPECT_EQ(rank_devices({0, 1, 2, 3}, {7, 7, 7, 7}), "0,1,2,3");
  EXPECT_EQ(rank_devices({0, 1, 0, 1}, {7, 7, 9, 9}), "0:0,0:1,1:0,1:1");  // two nodes, ranks by slot
  EXPECT_EQ(rank_devices({0, 0, 1, 1}, {9, 7, 9, 7}), "0:0,1:0,0:1,1:1");  // the same, placed cyclically
  EXPECT_EQ(rank_devices({3, 0, 1}, {5, 6, 7}), "0:3,1:0,2:1");            // one rank per node
}

}  // namespace
}  // namespace tb
