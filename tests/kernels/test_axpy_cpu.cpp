// tests/kernels/test_axpy_cpu.cpp — tb::cpu::add_inplace (dst += src, n floats)
// against a naive loop: exact (one float addition per element) for sizes on both
// sides of the OpenMP threshold and at 1 and 4 threads; empty and invalid inputs.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu/axpy.h"
#include "kernels/error.h"
#include "tests/random_vec.h"

namespace tb::cpu {
namespace {

using tb::test::random_vec;

TEST(AddInplaceCpu, EqualsTheNaiveLoopExactlyAtAnyThreadCount) {
  const int saved = omp_get_max_threads();
  for (int threads : {1, 4}) {
    omp_set_num_threads(threads);
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1000}, (int64_t{1} << 16) - 1, (int64_t{1} << 16) + 13,
                      int64_t{300001}}) {
      std::vector<float> dst = random_vec(n, 1u + static_cast<uint32_t>(n), -3.0f, 3.0f);
      const std::vector<float> src = random_vec(n, 2u + static_cast<uint32_t>(n), -3.0f, 3.0f);
      std::vector<float> want = dst;
      for (size_t i = 0; i < want.size(); ++i) want[i] = want[i] + src[i];
      add_inplace(dst.data(), src.data(), n);
      EXPECT_EQ(dst, want) << "n " << n << " threads " << threads;
    }
  }
  omp_set_num_threads(saved);
}

TEST(AddInplaceCpu, AddingTwiceAccumulatesAndEmptyIsANoOp) {
  std::vector<float> dst = {1.0f, -2.0f, 0.5f};
  const std::vector<float> src = {0.25f, 2.0f, -1.5f};
  add_inplace(dst.data(), src.data(), 3);
  add_inplace(dst.data(), src.data(), 3);
  EXPECT_EQ(dst, (std::vector<float>{1.5f, 2.0f, -2.5f}));  // exact in binary
  add_inplace(nullptr, nullptr, 0);                         // nothing to do, nothing read
}

TEST(AddInplaceCpu, RejectsNegativeSizesAndNullPointers) {
  float a = 0, b = 0;
  EXPECT_THROW(add_inplace(&a, &b, -1), Error);
  EXPECT_THROW(add_inplace(nullptr, &b, 1), Error);
  EXPECT_THROW(add_inplace(&a, nullptr, 1), Error);
}

}  // namespace
}  // namespace tb::cpu
