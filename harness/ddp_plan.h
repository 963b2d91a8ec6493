// harness/ddp_plan.h — the pure (communication-free) parts of data-parallel training,
// shared by cpu-ddp and cuda-ddp and unit-tested without MPI:
//  * how a global batch of B rows is cut into per-rank shards (uneven splits allowed);
//  * how the flat gradient buffer is cut into all-reduce buckets, filled in reverse
//    layer order (the order backward produces them) and issued in a fixed order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/model.h"

namespace tb {

// Rows [begin, end) of a global batch of `rows` that rank `rank` of `world` trains on:
// the first rows % world ranks get one row more. Some shards are empty when rows < world.
struct Shard {
  int64_t begin = 0, end = 0;
};
Shard shard_of(int64_t rows, int rank, int world);

// A contiguous slice [offset, offset + count) of the flat gradient buffer holding
// whole layers first_layer..last_layer; it can be reduced once layer first_layer's
// gradients are final (backward runs last layer -> first).
struct Bucket {
  int64_t offset = 0, count = 0;
  int first_layer = 0, last_layer = 0;
};
// Buckets of at least bucket_bytes (except the last), whole layers each, in the
// order they become ready (last layer first). bucket_bytes <= 0 means one bucket per layer.
std::vector<Bucket> plan_buckets(const ParamLayout& layout, int64_t bucket_bytes);

// Fault injection for tests (environment variable TB_FAULT="rank=R,step=S,kind=K",
// K one of throw, exit, kill, hang, nan): the fault fires on rank R at its S-th
// training step (1-based, warm-up included).
struct Fault {
  int rank = -1;
  int64_t step = -1;
  std::string kind;
  bool armed() const { return rank >= 0; }
};
Fault fault_from_env();

}  // namespace tb
