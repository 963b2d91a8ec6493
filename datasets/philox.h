// datasets/philox.h — Philox4x32-10 counter-based generator (Salmon et al., SC'11).
// Every value is a pure function of (key, counter): no state, so any thread, rank
// or device can produce exactly its own rows and the bytes never depend on how
// the work was split. We map (seed, stream, row, col) to key = seed, counter =
// (col, row_lo, row_hi, stream).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/hd.h"

namespace tb {

struct U32x4 {
  uint32_t v[4];
};

TB_HD void philox_mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

// Raw Philox4x32 with 10 rounds; checked against Random123's known-answer vectors.
TB_HD U32x4 philox4x32_10(U32x4 ctr, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(kM0, ctr.v[0], &hi0, &lo0);
    philox_mulhilo(kM1, ctr.v[2], &hi1, &lo1);
    ctr = U32x4{{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
    key0 += kW0;
    key1 += kW1;
  }
  return ctr;
}

TB_HD U32x4 philox_at(uint64_t seed, uint32_t stream, uint64_t row, uint64_t col) {
  const U32x4 ctr{{static_cast<uint32_t>(col), static_cast<uint32_t>(row),
                   static_cast<uint32_t>(row >> 32), stream}};
  return philox4x32_10(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Uniform in [0, 1) with 24 random bits: exactly representable in float.
TB_HD float bits_to_unit_float(uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }

// Uniform in [lo, hi) as float, pure in (seed, stream, row, col).
TB_HD float uniform_at(uint64_t seed, uint32_t stream, uint64_t row, uint64_t col, float lo, float hi) {
  const U32x4 r = philox_at(seed, stream, row, col);
  return lo + (hi - lo) * bits_to_unit_float(r.v[0]);
}

// Standard normal by Box-Muller in double (host and device agree to rounding).
TB_HD double normal_at(uint64_t seed, uint32_t stream, uint64_t row, uint64_t col) {
  const U32x4 r = philox_at(seed, stream, row, col);
  // u1 in (0, 1] so log(u1) is finite; u2 in [0, 1).
  const double u1 = (static_cast<double>(r.v[0]) + 1.0) * (1.0 / 4294967296.0);
  const double u2 = static_cast<double>(r.v[1]) * (1.0 / 4294967296.0);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Streams: one per independent quantity so that none overlaps another.
enum PhiloxStream : uint32_t {
  kStreamFeatures = 0,   // X
  kStreamTeacherW = 1,   // regression W* / classification teacher weights
  kStreamTeacherB = 2,   // regression b* / teacher bias
  kStreamNoise = 3,      // regression label noise
  kStreamShuffle = 4,    // per-epoch permutation
  kStreamInitBase = 16,  // parameters: layer l uses 16 + 2l (weights) and 17 + 2l (bias)
};

}  // namespace tb
