// tests/kernels/test_aligned_buffer.cpp — Buffer (kernels/cpu/aligned_buffer.h): get()'s
// alignment and growth, and get_apart()'s placement half a page from any pointer, inside
// the buffer, for every float position of that pointer within a page.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu/aligned_buffer.h"

namespace tb::cpu {
namespace {

uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(AlignedBuffer, GetIsAlignedAndKeepsItsStorageWhileLargeEnough) {
  Buffer buf;
  float* p = buf.get(100);
  EXPECT_EQ(addr(p) % 64, 0u);
  EXPECT_EQ(buf.get(50), p);  // no shrink, no reallocation
  EXPECT_GE(buf.size(), 100);
  float* q = buf.get(100000);
  EXPECT_EQ(addr(q) % 64, 0u);
  EXPECT_EQ(buf.data(), q);
  EXPECT_GE(buf.size(), 100000);
}

TEST(AlignedBuffer, GetApartStartsHalfAPageFromEveryOffsetAndFitsTheBuffer) {
  const int64_t n = 5000;
  std::vector<float> page(2048);  // every float position of a page, whatever its alignment
  Buffer buf;
  for (size_t i = 0; i < 1024; ++i) {
    const float* from = page.data() + i;
    float* p = buf.get_apart(n, from);
    ASSERT_EQ(addr(p) % 64, 0u) << "offset " << i;
    // At or just past 2048 bytes from `from`'s page offset: the 64-byte alignment may
    // move it up to 60 bytes further, never closer.
    const uintptr_t gap = (addr(p) - addr(from)) & 4095;
    EXPECT_GE(gap, 2048u) << "offset " << i;
    EXPECT_LT(gap, 2048u + 64u) << "offset " << i;
    // The n floats lie inside what was allocated, and get_apart asked for the slack the
    // callers size their buffers by (linear_mse_step sizes before its parallel region).
    ASSERT_GE(buf.size(), n + Buffer::kApartSlack);
    EXPECT_GE(p, buf.data());
    EXPECT_LE(p + n, buf.data() + buf.size()) << "offset " << i;
    EXPECT_LE(p + n, buf.data() + n + Buffer::kApartSlack) << "offset " << i;
  }
}

}  // namespace
}  // namespace tb::cpu
