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

// Positions within a global batch of `rows` that rank `rank` reads: its shard, or
// with `deterministic` the union of its leaves (below), one contiguous range either way.
// (A world size that does not divide kLeaves falls back to the shard; the trainer
// refuses that configuration.)
Shard rank_positions(int64_t rows, int rank, int world, bool deterministic);

// True when every step of the epoch reads consecutive rows: for each batch s, the
// rank's positions p in it hold order[p] = order[p0] + (p - p0). Then a step can read
// its rows in place (from order[p0] on) instead of gathering them. order holds
// dataset row indices (-1 where this rank holds no copy); batches are the ranges
// [s * batch, min((s+1) * batch, rows)), s < num_batches.
bool shards_in_place(const std::vector<int64_t>& order, int64_t batch, int64_t num_batches, int64_t rows, int rank,
                     int world);

// cuda-ddp takes one GPU per rank: "" when `gpus` GPUs can hold `ranks` ranks on one
// node, else why not ("needs N GPUs, one per rank, found M"), for a skipped row.
std::string one_gpu_per_rank_shortfall(int gpus, int ranks);

// The devices column of a cuda-ddp row: every rank's GPU in rank order. `device[r]` is
// rank r's GPU index and `node[r]` any key equal for ranks on the same host (a hostname
// hash). One node: "0,1,2,3". Several: NODE:GPU per rank, "0:0,0:1,1:0,1:1", nodes
// numbered from 0 by their first rank — whatever the placement (by slot or cyclic),
// two nodes' GPU 0 never read as one shared GPU.
std::string rank_devices(const std::vector<int>& device, const std::vector<uint32_t>& node);

// A PCI bus id ("0000:3b:00.0", cudaDeviceGetPCIBusId) as a number exact in a double
// (domain << 16 | bus << 8 | device << 3 | function), so it can travel through an
// allgather of doubles; -1 for text that is not one. pci_bus_text turns it back.
double pci_bus_key(const std::string& id);
std::string pci_bus_text(double key);
// A bus id as pci_bus_text writes it (lower case, 4-digit domain); other text unchanged.
std::string pci_bus_normal(const std::string& id);

// The gpu_bus_ids column of a multi-rank row: every rank's GPU by PCI bus id, in rank
// order. One node: "0000:3b:00.0,0000:5e:00.0". Several: NODE/BUS per rank, nodes
// numbered as in rank_devices ("0/0000:3b:00.0,1/0000:3b:00.0"): a bus id names a GPU
// only within its node.
std::string rank_bus_ids(const std::vector<std::string>& bus, const std::vector<uint32_t>& node);

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

// Deterministic mode: the global batch is cut into kLeaves fixed leaves
// (shard_of(rows, leaf, kLeaves)); rank r computes leaves [r*kLeaves/N, (r+1)*kLeaves/N)
// separately, every rank gathers all leaf gradients and adds them in the fixed tree
// of tree_sum — the same additions in the same order whatever the world size.
inline constexpr int kLeaves = 12;  // divisible by world sizes 1, 2, 3, 4, 6, 12

// Sums the k vectors v[0..k) (each n long, laid out one after another) into v[0]
// by a fixed pairwise tree: stride 1, 2, 4, ... v[i] += v[i + stride].
template <class T>
void tree_sum(T* v, int k, int64_t n) {
  for (int stride = 1; stride < k; stride *= 2) {
    for (int i = 0; i + stride < k; i += 2 * stride) {
      T* a = v + static_cast<int64_t>(i) * n;
      const T* b = v + static_cast<int64_t>(i + stride) * n;
      for (int64_t e = 0; e < n; ++e) a[e] += b[e];
    }
  }
}

}  // namespace tb
