// tests/random_vec.h — fresh random test data (never zeros, never the same twice in a
// test): n floats uniform in [lo, hi) from a seeded std::mt19937.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace tb::test {

inline std::vector<float> random_vec(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed * 2654435761u + 17u);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = u(rng);
  return x;
}

}  // namespace tb::test
