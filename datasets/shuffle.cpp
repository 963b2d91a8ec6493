// datasets/shuffle.cpp — per-epoch row order: a seeded Fisher-Yates permutation.
// Shapes: N rows -> order[N], a permutation of [0, N).
// Step i (from N-1 down to 1) swaps order[i] with order[j], j uniform in [0, i],
// drawn from philox_at(seed, kStreamShuffle, epoch, i): each draw is a pure function
// of (seed, epoch, i), so the order never depends on the thread count.
// j = (64-bit word) mod (i + 1): the modulo bias is below (i + 1) / 2^64, i.e. under
// 2^-32 for any N < 2^32 — far beneath anything a training run can detect.
#include "datasets/shuffle.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "datasets/philox.h"

namespace tb {

namespace {

uint64_t draw_index(uint64_t seed, uint64_t epoch, uint64_t i) {
  const U32x4 r = philox_at(seed, kStreamShuffle, epoch, i);
  const uint64_t word = (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
  return word % (i + 1);
}

}  // namespace

void epoch_order(uint64_t seed, int64_t epoch, int64_t n, bool shuffle, std::vector<int64_t>* order) {
  if (order == nullptr) throw std::invalid_argument("epoch_order: order is null");
  if (n < 0) throw std::invalid_argument("epoch_order: n must be >= 0 (got " + std::to_string(n) + ")");
  order->resize(static_cast<size_t>(n));
  int64_t* o = order->data();
  for (int64_t k = 0; k < n; ++k) o[k] = k;
  if (!shuffle || n < 2) return;

  // The draws are independent, so they are made in parallel a block at a time;
  // the swaps, which depend on each other, run in order.
  const uint64_t ep = static_cast<uint64_t>(epoch);
  constexpr int64_t kBlock = int64_t{1} << 16;
  std::vector<int64_t> js(static_cast<size_t>(std::min(n - 1, kBlock)));
  for (int64_t hi = n - 1; hi >= 1; hi -= kBlock) {
    const int64_t lo = std::max<int64_t>(1, hi - kBlock + 1);  // this block is steps hi, hi-1, ..., lo
    const int64_t count = hi - lo + 1;
    int64_t* j = js.data();
#pragma omp parallel for schedule(static) if (count >= 4096)
    for (int64_t t = 0; t < count; ++t) {
      j[t] = static_cast<int64_t>(draw_index(seed, ep, static_cast<uint64_t>(hi - t)));
    }
    for (int64_t t = 0; t < count; ++t) std::swap(o[hi - t], o[j[t]]);
  }
}

}  // namespace tb
