// harness/rank_data.h — the rows a process holds. Single-process backends hold the
// whole dataset. A DDP rank with synthetic data generates only the rows it reads
// (datasets are counter-based, so nothing is sent): its positions of every global
// batch (ddp_plan.h rank_positions) in every epoch order the run visits, plus the
// rows it evaluates (eval_ranges). File datasets are read whole by every rank.
// Without shuffling a rank evaluates the very rows it trains on and holds about
// N / world rows; with E shuffled epochs it holds the union of its E shards and its
// evaluation cut, about N (1 - (1 - 1/world)^(E+1)) rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "harness/ddp_plan.h"
#include "harness/run_config.h"

namespace tb {

// The row orders a run visits (datasets/shuffle.h): one per epoch with --shuffle,
// else the identity once; epoch e (warm-up epochs counted from 0 too) uses
// orders[e % orders.size()]. n: the dataset's rows.
std::vector<std::vector<int64_t>> epoch_orders(const RunConfig& c, int64_t n);

// The dataset rows rank `rank` of `world` reads over those orders and in evaluation,
// ascending and distinct. c.data.n must hold the dataset's rows.
std::vector<int64_t> rows_read_by_rank(const RunConfig& c, int rank, int world);

// The data this process needs: a subset (make_synthetic_rows) for a synthetic dataset
// and world > 1, else load_dataset(c.data). Throws as load_dataset does.
Dataset load_rank_dataset(const RunConfig& c, int rank, int world);

// Rewrites an order of dataset rows into indices of the held rows (-1 for a row not
// held). A dataset holding every row leaves the order as it is.
void to_local_rows(const Dataset& data, std::vector<int64_t>* order);

// The rows rank `rank` of `world` evaluates: its shard (shard_of) of each batch-sized
// chunk [s * batch, min((s + 1) * batch, n)) of the dataset — every row exactly once
// over the ranks, and without shuffling the very rows it trains on. Returned as
// ranges of held-row indices (x/y/labels), adjacent ones merged, ascending.
std::vector<Shard> eval_ranges(const Dataset& data, int64_t batch, int rank, int world);

// "" when rank `rank` of `world` holds every row it reads in these (local) orders and
// every row it evaluates, else a one-line reason naming the rank and the row.
std::string missing_rows(const RunConfig& c, const Dataset& data, const std::vector<std::vector<int64_t>>& local_orders,
                         int rank, int world);

}  // namespace tb
