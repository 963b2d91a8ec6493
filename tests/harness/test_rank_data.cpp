// tests/harness/test_rank_data.cpp — what a DDP rank holds (harness/rank_data.h):
// exactly the rows it reads (hand-computed on a small case, and against a naive loop
// over the shuffled orders), the rows' bytes equal the whole dataset's, orders
// rewritten into held indices, and a rank/world mismatch named instead of read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "datasets/shuffle.h"
#include "datasets/synthetic.h"
#include "harness/ddp_plan.h"
#include "harness/rank_data.h"

namespace tb {
namespace {

RunConfig config(int64_t n, int64_t batch, bool shuffle, int64_t epochs) {
  RunConfig c;
  c.backend = "cpu-ddp";
  c.data.kind = "synthetic-regression";
  c.data.task = Task::kRegression;
  c.data.n = n;
  c.data.d = 5;
  c.data.o = 2;
  c.data.seed = 7;
  c.batch = batch;
  c.shuffle = shuffle;
  c.epochs = epochs;
  c.seed = 3;
  return c;
}

TEST(RankData, UnshuffledRanksHoldTheirShardsOnlyAndEvaluateThem) {
  // 10 rows, batch 4, 3 ranks: batches [0,4) [4,8) [8,10); shards of 4 are 2+1+1 rows,
  // of 2 are 1+1+0. A rank evaluates the same cut of the rows, so it holds nothing more.
  for (bool drop_last : {false, true}) {  // the dropped tail [8,10) is still evaluated
    RunConfig c = config(10, 4, false, 2);
    c.drop_last = drop_last;
    EXPECT_EQ(rows_read_by_rank(c, 0, 3), (std::vector<int64_t>{0, 1, 4, 5, 8}));
    EXPECT_EQ(rows_read_by_rank(c, 1, 3), (std::vector<int64_t>{2, 6, 9}));
    EXPECT_EQ(rows_read_by_rank(c, 2, 3), (std::vector<int64_t>{3, 7}));
    EXPECT_EQ(rows_read_by_rank(c, 0, 1).size(), 10u);
    // ... and evaluates all it holds, as one range of held rows.
    for (int rank = 0; rank < 3; ++rank) {
      const Dataset d = load_rank_dataset(c, rank, 3);
      const std::vector<Shard> ev = eval_ranges(d, 4, rank, 3);
      ASSERT_EQ(ev.size(), 1u) << rank;
      EXPECT_EQ(ev[0].begin, 0);
      EXPECT_EQ(ev[0].end, d.held_rows());
    }
  }
}

TEST(RankData, EvaluationCoversEveryRowOnceOverTheRanks) {
  for (int world : {1, 2, 3, 5}) {
    const RunConfig c = config(203, 26, true, 2);
    std::vector<int> seen(203, 0);
    for (int rank = 0; rank < world; ++rank) {
      const Dataset d = load_rank_dataset(c, rank, world);
      for (const Shard& r : eval_ranges(d, 26, rank, world)) {
        for (int64_t l = r.begin; l < r.end; ++l) ++seen[d.subset ? d.row_ids[l] : l];
      }
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 203) << world;
  }
}

TEST(RankData, ShuffledRanksHoldExactlyTheRowsTheirShardsVisit) {
  for (int world : {2, 3, 4}) {
    for (bool drop_last : {false, true}) {
      RunConfig c = config(203, 26, true, 3);
      c.drop_last = drop_last;
      std::set<int64_t> all;
      for (int rank = 0; rank < world; ++rank) {
        // Naive: walk every epoch's order batch by batch.
        std::set<int64_t> expect;
        const int64_t rows = drop_last ? (203 / 26) * 26 : 203;
        for (int64_t e = 0; e < 3; ++e) {
          std::vector<int64_t> order;
          epoch_order(c.seed, e, 203, true, &order);
          for (int64_t b = 0; b < rows; b += 26) {
            const Shard s = shard_of(std::min<int64_t>(26, rows - b), rank, world);
            for (int64_t p = b + s.begin; p < b + s.end; ++p) expect.insert(order[p]);
          }
        }
        for (int64_t b = 0; b < 203; b += 26) {  // the rows it evaluates
          const Shard s = shard_of(std::min<int64_t>(26, 203 - b), rank, world);
          for (int64_t r = b + s.begin; r < b + s.end; ++r) expect.insert(r);
        }
        const std::vector<int64_t> got = rows_read_by_rank(c, rank, world);
        EXPECT_EQ(got, std::vector<int64_t>(expect.begin(), expect.end())) << world << "/" << rank;
        EXPECT_LT(got.size(), 203u) << "a rank of " << world << " should not hold every row";
        all.insert(got.begin(), got.end());
      }
      EXPECT_EQ(all.size(), 203u) << "every row is held by some rank";
    }
  }
}

TEST(RankData, DeterministicRanksHoldTheirLeavesWhichTileTheBatch) {
  for (int64_t rows : {1, 5, 12, 13, 26, 100}) {
    for (int world : {1, 2, 3, 4, 6, 12}) {
      int64_t next = 0;
      for (int r = 0; r < world; ++r) {
        const Shard p = rank_positions(rows, r, world, true);
        EXPECT_EQ(p.begin, next) << rows << "/" << world;
        const int per = kLeaves / world;  // its leaves, one after another
        EXPECT_EQ(p.begin, shard_of(rows, r * per, kLeaves).begin);
        EXPECT_EQ(p.end, shard_of(rows, r * per + per - 1, kLeaves).end);
        next = p.end;
      }
      EXPECT_EQ(next, rows);
    }
  }
  // 5 does not divide the leaves: the plain shard (the trainer refuses the run).
  EXPECT_EQ(rank_positions(10, 1, 5, true).begin, shard_of(10, 1, 5).begin);
}

TEST(RankData, LocalOrdersReadTheSameBytesAsTheWholeDataset) {
  const RunConfig c = config(203, 26, true, 2);
  const Dataset whole = load_dataset(c.data);
  const Dataset mine = load_rank_dataset(c, 1, 3);
  ASSERT_TRUE(mine.subset);
  EXPECT_FALSE(load_rank_dataset(c, 0, 1).subset) << "one rank holds everything";
  std::vector<std::vector<int64_t>> global = epoch_orders(c, 203), local = global;
  ASSERT_EQ(global.size(), 2u);
  for (auto& o : local) to_local_rows(mine, &o);
  EXPECT_EQ(missing_rows(c, mine, local, 1, 3), "");
  int64_t compared = 0;
  for (size_t k = 0; k < global.size(); ++k) {
    for (size_t p = 0; p < global[k].size(); ++p) {
      const int64_t l = local[k][p];
      if (l < 0) continue;
      const int64_t g = global[k][p];
      ASSERT_EQ(mine.row_ids[l], g);
      EXPECT_EQ(0, std::memcmp(&mine.x[l * 5], &whole.x[g * 5], 5 * sizeof(float)));
      EXPECT_EQ(0, std::memcmp(&mine.y[l * 2], &whole.y[g * 2], 2 * sizeof(float)));
      ++compared;
    }
  }
  // Each order is a permutation, so every held row has exactly one local position in each.
  EXPECT_EQ(compared, 2 * mine.held_rows());
  // The same data given to another rank is caught and named, not read.
  const std::string why = missing_rows(c, mine, local, 2, 3);
  EXPECT_NE(why.find("rank 2 of 3 holds no copy"), std::string::npos) << why;
}

TEST(RankData, ARowMissingOnlyFromEvaluationIsNamedToo) {
  // Unshuffled, 10 rows, batch 4, 3 ranks: rank 0 trains on 0,1,4,5,8 and evaluates the
  // same rows plus nothing else; drop row 8 from a copy that trains only 2 epochs of
  // full batches (--drop-last: batch [8,10) is never trained, only evaluated).
  RunConfig c = config(10, 4, false, 2);
  c.drop_last = true;
  const Dataset mine = make_synthetic_rows(c.data, {0, 1, 4, 5});  // 8 is missing
  std::vector<std::vector<int64_t>> local = epoch_orders(c, 10);
  for (auto& o : local) to_local_rows(mine, &o);
  const std::string why = missing_rows(c, mine, local, 0, 3);
  EXPECT_NE(why.find("rank 0 of 3 holds no copy of row 8, which it evaluates"), std::string::npos) << why;
  EXPECT_EQ(missing_rows(c, load_rank_dataset(c, 0, 3), local, 0, 3), "");  // the real rank data holds row 8
}

TEST(RankData, ShardsInPlaceWhenEachStepReadsConsecutiveRows) {
  const RunConfig c = config(103, 10, false, 1);
  std::vector<int64_t> identity;
  epoch_order(c.seed, 0, 103, false, &identity);
  EXPECT_TRUE(shards_in_place(identity, 10, 11, 103, 0, 1));
  // A rank's unshuffled local order: its shards are consecutive among its rows.
  for (int rank = 0; rank < 3; ++rank) {
    std::vector<int64_t> local = identity;
    to_local_rows(load_rank_dataset(c, rank, 3), &local);
    EXPECT_TRUE(shards_in_place(local, 10, 11, 103, rank, 3)) << rank;
    EXPECT_FALSE(shards_in_place(local, 10, 11, 103, (rank + 1) % 3, 3)) << "other ranks' positions are -1";
  }
  std::vector<int64_t> shuffled;
  epoch_order(c.seed, 0, 103, true, &shuffled);
  EXPECT_FALSE(shards_in_place(shuffled, 10, 11, 103, 0, 1));
}

}  // namespace
}  // namespace tb
