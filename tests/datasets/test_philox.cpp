// tests/datasets/test_philox.cpp — Philox4x32-10 against Random123's known-answer
// vectors (kat_vectors: philox4x32_10), the (seed, stream, row, col) mapping, and
// statistical sanity of the uniform and normal draws over 100k values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "datasets/philox.h"

namespace tb {
namespace {

void expect_kat(U32x4 ctr, uint32_t k0, uint32_t k1, U32x4 want) {
  const U32x4 got = philox4x32_10(ctr, k0, k1);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(got.v[i], want.v[i]) << "word " << i << std::hex << " got 0x" << got.v[i] << " want 0x" << want.v[i];
  }
}

TEST(Philox, KnownAnswerZero) {
  expect_kat(U32x4{{0, 0, 0, 0}}, 0, 0, U32x4{{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}});
}

TEST(Philox, KnownAnswerAllOnes) {
  expect_kat(U32x4{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu,
             U32x4{{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}});
}

TEST(Philox, KnownAnswerPi) {
  expect_kat(U32x4{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u,
             U32x4{{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}});
}

TEST(Philox, AtMapsSeedStreamRowColToKeyAndCounter) {
  const uint64_t seed = 0x0123456789abcdefull, row = 0xfedcba9876543210ull, col = 0x1122334455667788ull;
  const U32x4 got = philox_at(seed, 7, row, col);
  // counter = (col, row_lo, row_hi, stream) with col truncated to 32 bits; key = (seed_lo, seed_hi).
  const U32x4 want = philox4x32_10(U32x4{{0x55667788u, 0x76543210u, 0xfedcba98u, 7u}}, 0x89abcdefu, 0x01234567u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got.v[i], want.v[i]);
  // Pure: same inputs, same bits; any input changed, different bits.
  EXPECT_EQ(philox_at(seed, 7, row, col).v[0], got.v[0]);
  EXPECT_NE(philox_at(seed, 8, row, col).v[0], got.v[0]);
  EXPECT_NE(philox_at(seed ^ (1ull << 40), 7, row, col).v[0], got.v[0]);
  EXPECT_NE(philox_at(seed, 7, row ^ (1ull << 40), col).v[0], got.v[0]);
  EXPECT_NE(philox_at(seed, 7, row, col + 1).v[0], got.v[0]);
}

TEST(Philox, UnitFloatEdges) {
  EXPECT_EQ(bits_to_unit_float(0u), 0.0f);
  EXPECT_LT(bits_to_unit_float(0xffffffffu), 1.0f);
  EXPECT_EQ(bits_to_unit_float(0x80000000u), 0.5f);
}

constexpr int kDraws = 100000;

// U(-1, 1): mean 0 (sd of the mean ~0.0018), variance 1/3 (sd of the estimate ~0.0009).
TEST(Philox, UniformRangeMeanVariance) {
  double sum = 0.0, sum2 = 0.0;
  for (int r = 0; r < kDraws; ++r) {
    const float u = uniform_at(42, kStreamFeatures, static_cast<uint64_t>(r / 10), r % 10, -1.0f, 1.0f);
    ASSERT_GE(u, -1.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    sum2 += static_cast<double>(u) * u;
  }
  const double mean = sum / kDraws, var = sum2 / kDraws - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);        // ~5.5 sd
  EXPECT_NEAR(var, 1.0 / 3.0, 0.005);  // ~5 sd
  // A shifted range maps the same bits affinely.
  const float a = uniform_at(42, 0, 3, 4, 0.0f, 1.0f), b = uniform_at(42, 0, 3, 4, 2.0f, 4.0f);
  EXPECT_FLOAT_EQ(b, 2.0f + 2.0f * a);
}

// N(0, 1): mean 0 (sd of the mean ~0.0032), variance 1 (sd of the estimate ~0.0045),
// and tail sanity: |z| > 3 has probability 0.0027 (expected ~270 of 100k).
TEST(Philox, NormalMeanVariance) {
  double sum = 0.0, sum2 = 0.0;
  int tail = 0;
  for (int r = 0; r < kDraws; ++r) {
    const double z = normal_at(7, kStreamNoise, static_cast<uint64_t>(r), 3);
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sum2 += z * z;
    tail += std::fabs(z) > 3.0;
  }
  const double mean = sum / kDraws, var = sum2 / kDraws - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.02);  // ~6 sd
  EXPECT_NEAR(var, 1.0, 0.03);   // ~6.5 sd
  EXPECT_GT(tail, 170);          // loose: ~6 sd either side of 270
  EXPECT_LT(tail, 370);
}

}  // namespace
}  // namespace tb
