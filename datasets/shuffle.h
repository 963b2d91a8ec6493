// datasets/shuffle.h — the order rows are visited in an epoch.
// A seeded Fisher-Yates permutation that is a pure function of (seed, epoch):
// every backend, thread and rank derives the same order without communication.
#pragma once

#include <cstdint>
#include <vector>

namespace tb {

// Writes a permutation of [0, n) into order (resized). shuffle == false gives identity.
void epoch_order(uint64_t seed, int64_t epoch, int64_t n, bool shuffle, std::vector<int64_t>* order);

}  // namespace tb
