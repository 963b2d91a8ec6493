// tests/kernels/test_ceiling_loops_cpu.cpp — the loops behind the measured CPU ceilings
// (kernels/cpu/ceiling_loops.h) compute what they claim: every FMA lane equals the naive
// recurrence x = fmaf(x, a, b) run the same number of times, and the triad's values equal
// b + s * c at 1 and 2 threads, on sizes that do not divide evenly among the threads.
// No timing here: harness/ceilings.cpp times these loops, tests/harness checks the JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/ceiling_loops.h"
#include "tests/random_vec.h"

namespace tb::cpu {
namespace {

TEST(FmaLoopCpu, EveryLaneEqualsTheNaiveFmaRecurrence) {
  const int lanes = kFmaChains * kFmaLanes;
  ASSERT_TRUE(kFmaLanes == 4 || kFmaLanes == 8 || kFmaLanes == 16) << kFmaLanes;
  // a < 1 keeps the values bounded (fixed point b / (1 - a) = 2); iteration counts
  // that are not multiples of anything the loop might unroll by.
  const float a = 0.99951171875f, b = 0.0009765625f;
  for (int64_t iters : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1001}}) {
    std::vector<float> out(static_cast<size_t>(lanes), -1.0f);
    fma_loop(iters, a, b, out.data());
    for (int i = 0; i < lanes; ++i) {
      float x = 1.0f + static_cast<float>(i) / 1024.0f;
      for (int64_t k = 0; k < iters; ++k) x = std::fmaf(x, a, b);
      if (std::string(fma_loop_isa()) == "generic") {
        EXPECT_NEAR(out[static_cast<size_t>(i)], x, 1e-5f * static_cast<float>(iters + 1)) << "lane " << i;
      } else {
        EXPECT_EQ(out[static_cast<size_t>(i)], x) << "lane " << i << " after " << iters << " rounds";
      }
    }
  }
}

TEST(FmaLoopCpu, NamesItsInstructionSet) {
  const std::string isa = fma_loop_isa();
  EXPECT_TRUE(isa == "avx512f" || isa == "avx2+fma" || isa == "neon" || isa == "generic") << isa;
#if defined(__AVX512F__)
  EXPECT_EQ(isa, "avx512f");
  EXPECT_EQ(kFmaLanes, 16);
#endif
}

TEST(TriadCpu, ValuesAreBPlusSTimesCAtOneAndTwoThreads) {
  for (int threads : {1, 2}) {
    for (int64_t n : {int64_t{1}, int64_t{13}, int64_t{100003}}) {
      const std::vector<float> b = tb::test::random_vec(n, 3u + static_cast<uint32_t>(n), -2.0f, 2.0f);
      const std::vector<float> c = tb::test::random_vec(n, 4u + static_cast<uint32_t>(n), -2.0f, 2.0f);
      std::vector<float> a(static_cast<size_t>(n), 0.0f);
      first_touch(a.data(), 7.0f, n, threads);
      for (float v : a) ASSERT_EQ(v, 7.0f);
      const float s = 3.0f;
      triad(a.data(), b.data(), c.data(), s, n, threads);
      for (int64_t i = 0; i < n; ++i) {
        const size_t k = static_cast<size_t>(i);
        // One rounding (fused) or two: within 2 ulps of the larger term either way.
        const double want = double(b[k]) + double(s) * double(c[k]);
        const double tol = 2.5e-7 * (std::fabs(double(b[k])) + std::fabs(double(s) * double(c[k])));
        ASSERT_NEAR(a[k], want, tol) << "i " << i << " n " << n << " threads " << threads;
      }
    }
  }
}

}  // namespace
}  // namespace tb::cpu
