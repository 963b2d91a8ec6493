// tests/datasets/test_shuffle.cpp — per-epoch order: a permutation, a pure function
// of (seed, epoch), identity when disabled, and roughly uniform.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "datasets/shuffle.h"

namespace tb {
namespace {

bool is_permutation_of_iota(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != static_cast<int64_t>(i)) return false;
  return true;
}

std::vector<int64_t> order_of(uint64_t seed, int64_t epoch, int64_t n, bool shuffle = true) {
  std::vector<int64_t> o{99, 98};  // stale contents must be replaced
  epoch_order(seed, epoch, n, shuffle, &o);
  return o;
}

TEST(Shuffle, IsAPermutation) {
  for (int64_t n : {2, 3, 10, 1000, 100003}) {
    const std::vector<int64_t> o = order_of(1, 0, n);
    ASSERT_EQ(o.size(), static_cast<size_t>(n));
    EXPECT_TRUE(is_permutation_of_iota(o)) << "n=" << n;
  }
}

TEST(Shuffle, SameSeedAndEpochSameOrder) {
  EXPECT_EQ(order_of(7, 3, 5000), order_of(7, 3, 5000));
}

TEST(Shuffle, DifferentEpochsAndSeedsDiffer) {
  const std::vector<int64_t> base = order_of(7, 3, 5000);
  EXPECT_NE(base, order_of(7, 4, 5000));
  EXPECT_NE(base, order_of(8, 3, 5000));
  std::vector<int64_t> iota(5000);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_NE(base, iota);
}

TEST(Shuffle, IdentityWhenDisabled) {
  std::vector<int64_t> iota(777);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(order_of(7, 3, 777, false), iota);
}

TEST(Shuffle, TinySizes) {
  EXPECT_TRUE(order_of(1, 0, 0).empty());
  EXPECT_EQ(order_of(1, 0, 1), std::vector<int64_t>{0});
  EXPECT_TRUE(is_permutation_of_iota(order_of(1, 0, 2)));
  std::vector<int64_t> o;
  EXPECT_THROW(epoch_order(1, 0, -1, true, &o), std::invalid_argument);
  EXPECT_THROW(epoch_order(1, 0, 5, true, nullptr), std::invalid_argument);
}

TEST(Shuffle, IndependentOfThreadCount) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const std::vector<int64_t> one = order_of(5, 2, 200000);  // spans several draw blocks
  omp_set_num_threads(3);
  const std::vector<int64_t> three = order_of(5, 2, 200000);
  omp_set_num_threads(saved);
  EXPECT_EQ(one, three);
  EXPECT_TRUE(is_permutation_of_iota(one));
}

// Where element 0 lands over E = 20000 epochs with n = 10: each position expects
// 2000 (sd ~42); a chi-square with 9 degrees of freedom has mean 9 and exceeds 40
// with probability < 1e-5; each count within 15% (~7 sd) of 2000.
TEST(Shuffle, RoughlyUniform) {
  constexpr int64_t n = 10, epochs = 20000;
  std::vector<int64_t> hits(n, 0);
  std::vector<int64_t> o;
  for (int64_t e = 0; e < epochs; ++e) {
    epoch_order(123, e, n, true, &o);
    const auto it = std::find(o.begin(), o.end(), 0);
    ++hits[it - o.begin()];
  }
  const double expect = static_cast<double>(epochs) / n;
  double chi2 = 0.0;
  for (int64_t p = 0; p < n; ++p) {
    EXPECT_GT(hits[p], expect * 0.85) << "position " << p;
    EXPECT_LT(hits[p], expect * 1.15) << "position " << p;
    chi2 += (hits[p] - expect) * (hits[p] - expect) / expect;
  }
  EXPECT_LT(chi2, 40.0);
}

}  // namespace
}  // namespace tb
