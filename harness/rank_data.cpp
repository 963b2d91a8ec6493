// harness/rank_data.cpp — see rank_data.h.
#include "harness/rank_data.h"

#include <algorithm>
#include <string>

#include "datasets/shuffle.h"
#include "datasets/synthetic.h"
#include "harness/ddp_plan.h"

namespace tb {
namespace {

bool is_synthetic(const DatasetSpec& d) {
  return d.kind == "synthetic" || d.kind == "synthetic-regression" || d.kind == "synthetic-classification";
}

// Calls fn(begin, end) for the positions [begin, end) of each batch of an epoch that
// rank reads — the same cut the DDP trainers make (ddp_plan.h rank_positions).
template <class Fn>
void for_each_rank_range(const RunConfig& c, int rank, int world, Fn fn) {
  const int64_t rows = c.rows_per_epoch();
  for (int64_t s = 0; s < c.batches_per_epoch(); ++s) {
    const int64_t begin = s * c.batch;
    const Shard p = rank_positions(std::min(c.batch, rows - begin), rank, world, c.deterministic);
    fn(begin + p.begin, begin + p.end);
  }
}

// Calls fn(begin, end) for the dataset rows [begin, end) rank evaluates, ascending.
template <class Fn>
void for_each_eval_range(int64_t n, int64_t batch, int rank, int world, Fn fn) {
  for (int64_t b = 0; b < n; b += batch) {
    const Shard s = shard_of(std::min(batch, n - b), rank, world);
    if (s.end > s.begin) fn(b + s.begin, b + s.end);
  }
}

}  // namespace

std::vector<Shard> eval_ranges(const Dataset& data, int64_t batch, int rank, int world) {
  std::vector<Shard> out;
  for_each_eval_range(data.n, batch, rank, world, [&](int64_t b, int64_t e) {
    const int64_t first = data.local_row(b);  // a held range is consecutive among the held rows
    if (!out.empty() && out.back().end == first) {
      out.back().end = first + (e - b);
    } else {
      out.push_back(Shard{first, first + (e - b)});
    }
  });
  return out;
}

std::vector<std::vector<int64_t>> epoch_orders(const RunConfig& c, int64_t n) {
  const int64_t count = c.shuffle ? std::max<int64_t>(c.epochs, 1) : 1;
  std::vector<std::vector<int64_t>> orders(static_cast<size_t>(count));
  for (int64_t e = 0; e < count; ++e) epoch_order(c.seed, e, n, c.shuffle, &orders[static_cast<size_t>(e)]);
  return orders;
}

std::vector<int64_t> rows_read_by_rank(const RunConfig& c, int rank, int world) {
  const int64_t n = c.data.n;
  std::vector<char> read(static_cast<size_t>(n), 0);
  for (const std::vector<int64_t>& order : epoch_orders(c, n)) {
    for_each_rank_range(c, rank, world, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) read[static_cast<size_t>(order[static_cast<size_t>(p)])] = 1;
    });
  }
  for_each_eval_range(n, c.batch, rank, world, [&](int64_t b, int64_t e) {
    std::fill(read.begin() + b, read.begin() + e, 1);
  });
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < n; ++r) {
    if (read[static_cast<size_t>(r)]) rows.push_back(r);
  }
  return rows;
}

Dataset load_rank_dataset(const RunConfig& c, int rank, int world) {
  if (world <= 1 || !is_synthetic(c.data)) return load_dataset(c.data);
  return make_synthetic_rows(c.data, rows_read_by_rank(c, rank, world));
}

void to_local_rows(const Dataset& data, std::vector<int64_t>* order) {
  if (!data.subset) return;
  const std::vector<int64_t>& ids = data.row_ids;
  for (int64_t& r : *order) {
    const auto it = std::lower_bound(ids.begin(), ids.end(), r);
    r = (it != ids.end() && *it == r) ? it - ids.begin() : -1;
  }
}

std::string missing_rows(const RunConfig& c, const Dataset& data, const std::vector<std::vector<int64_t>>& local_orders,
                         int rank, int world) {
  std::string why;
  for_each_eval_range(data.n, c.batch, rank, world, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e && why.empty(); ++r) {
      if (data.subset && !std::binary_search(data.row_ids.begin(), data.row_ids.end(), r)) {
        why = "rank " + std::to_string(rank) + " of " + std::to_string(world) + " holds no copy of row " +
              std::to_string(r) + ", which it evaluates";
      }
    }
  });
  for (size_t k = 0; k < local_orders.size() && why.empty(); ++k) {
    for_each_rank_range(c, rank, world, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e && why.empty(); ++p) {
        if (local_orders[k][static_cast<size_t>(p)] < 0) {
          why = "rank " + std::to_string(rank) + " of " + std::to_string(world) + " holds no copy of the row at " +
                "position " + std::to_string(p) + " of epoch order " + std::to_string(k);
        }
      }
    });
  }
  return why;
}

}  // namespace tb
