// tests/kernels/test_gemm_layout.cpp — the row-major -> column-major GEMM mapping
// (kernels/gemm_layout.h, used by tb::cuda::gemm for cuBLAS) checked on the CPU:
// the mapped call runs through a naive COLUMN-major GEMM written here (with cuBLAS's
// argument rules: transposes, m/n/k, leading-dimension minimums) and must equal a
// naive ROW-major loop bitwise, and tb::cpu::gemm to fp32 tolerance. M, N, K as in
// kernels/cpu/gemm.h (row-major C is M x N, K summed). All four transpose
// combinations, odd shapes, padded leading dimensions, alpha/beta, beta == 0 over NaN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/gemm_layout.h"

namespace tb {
namespace {

// Column-major C (m x n, ldc) = alpha op(A) op(B) + beta C with cuBLAS's conventions:
// op(A) is m x k (A stored m x k, or k x m when trans_a), op(B) is k x n (B stored
// k x n, or n x k when trans_b), element (r, c) of a stored matrix at [r + c * ld].
// Sums in double over p = 0..k-1; beta == 0 does not read C. Leading dimensions are
// checked as cuBLAS does (CUBLAS_STATUS_INVALID_VALUE there, a test failure here).
void naive_col_major_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  ASSERT_GE(lda, std::max<int64_t>(1, trans_a ? k : m)) << "lda too small for cuBLAS";
  ASSERT_GE(ldb, std::max<int64_t>(1, trans_b ? n : k)) << "ldb too small for cuBLAS";
  ASSERT_GE(ldc, std::max<int64_t>(1, m)) << "ldc too small for cuBLAS";
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) {
      double dot = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = trans_a ? a[p + i * lda] : a[i + p * lda];
        const double y = trans_b ? b[j + p * ldb] : b[p + j * ldb];
        dot += x * y;
      }
      double out = double(alpha) * dot;
      if (beta != 0.0f) out += double(beta) * double(c[i + j * ldc]);
      c[i + j * ldc] = static_cast<float>(out);
    }
  }
}

// Row-major reference with the same arithmetic (products of floats are exact in
// double, summed in the same order), so the mapped call must match it bitwise.
void naive_row_major_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = trans_a ? a[p * lda + i] : a[i * lda + p];
        const double y = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        dot += y * x;
      }
      double out = double(alpha) * dot;
      if (beta != 0.0f) out += double(beta) * double(c[i * ldc + j]);
      c[i * ldc + j] = static_cast<float>(out);
    }
  }
}

std::vector<float> random_matrix(int64_t rows, int64_t ld, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(std::max<int64_t>(rows * ld, 1)));
  for (float& v : x) v = u(rng);
  return x;
}

struct Case {
  bool ta, tb;
  int64_t m, n, k, pad;
  float alpha, beta;
  bool c_nan;
};

std::string describe(const Case& tc) {
  return std::string(tc.ta ? "T" : "N") + (tc.tb ? "T" : "N") + " m=" + std::to_string(tc.m) +
         " n=" + std::to_string(tc.n) + " k=" + std::to_string(tc.k) + " pad=" + std::to_string(tc.pad) +
         " alpha=" + std::to_string(tc.alpha) + " beta=" + std::to_string(tc.beta) + (tc.c_nan ? " C=NaN" : "");
}

void check_case(const Case& tc, uint32_t seed) {
  SCOPED_TRACE(describe(tc));
  std::mt19937 rng(seed);
  const int64_t m = tc.m, n = tc.n, k = tc.k;
  // Row-major storage: A is M x K (K x M when ta), B is K x N (N x K when tb).
  const int64_t a_rows = tc.ta ? k : m, a_cols = tc.ta ? m : k;
  const int64_t b_rows = tc.tb ? n : k, b_cols = tc.tb ? k : n;
  const int64_t lda = a_cols + tc.pad, ldb = b_cols + tc.pad, ldc = n + tc.pad;
  const std::vector<float> a = random_matrix(a_rows, lda, rng), b = random_matrix(b_rows, ldb, rng);
  std::vector<float> c0 = random_matrix(m, ldc, rng);
  constexpr float kSentinel = 4321.0f;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < ldc; ++j)
      if (j >= n) {
        c0[i * ldc + j] = kSentinel;
      } else if (tc.c_nan) {
        c0[i * ldc + j] = std::numeric_limits<float>::quiet_NaN();
      }

  std::vector<float> mapped = c0, row_ref = c0, cpu = c0;
  const ColMajorGemm g = map_row_major_gemm(tc.ta, tc.tb, m, n, k, a.data(), lda, b.data(), ldb, mapped.data(), ldc);
  ASSERT_EQ(g.c, mapped.data());
  ASSERT_EQ(g.ldc, ldc);
  ASSERT_EQ(g.k, k);
  naive_col_major_gemm(g.trans_first, g.trans_second, g.m, g.n, g.k, tc.alpha, g.first, g.ld_first, g.second,
                       g.ld_second, tc.beta, g.c, g.ldc);
  if (::testing::Test::HasFatalFailure()) return;
  naive_row_major_gemm(tc.ta, tc.tb, m, n, k, tc.alpha, a.data(), lda, b.data(), ldb, tc.beta, row_ref.data(), ldc);
  cpu::gemm(tc.ta, tc.tb, m, n, k, tc.alpha, a.data(), lda, b.data(), ldb, tc.beta, cpu.data(), ldc);

  int failures = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const int64_t e = i * ldc + j;
      if (j >= n) {  // padding: nobody writes it
        if (mapped[e] != kSentinel && failures++ < 5) ADD_FAILURE() << "padding (" << i << "," << j << ") written";
        continue;
      }
      if (mapped[e] != row_ref[e] && failures++ < 5)
        ADD_FAILURE() << "mapped C(" << i << "," << j << ") = " << mapped[e] << ", row-major naive " << row_ref[e];
      // tb::cpu::gemm: the bound of tests/kernels/test_gemm_cpu.cpp.
      double mag = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = tc.ta ? a[p * lda + i] : a[i * lda + p];
        const double y = tc.tb ? b[j * ldb + p] : b[p * ldb + j];
        mag += std::fabs(x * y);
      }
      double scale = std::fabs(double(tc.alpha)) * mag;
      if (tc.beta != 0.0f) scale += std::fabs(double(tc.beta) * double(c0[e]));
      const double tol = double(k + 8) * std::ldexp(1.0, -23) * scale + 1e-30;
      if (!(std::fabs(double(mapped[e]) - double(cpu[e])) <= tol) && failures++ < 5)
        ADD_FAILURE() << "mapped C(" << i << "," << j << ") = " << mapped[e] << ", tb::cpu::gemm " << cpu[e] << " (tol "
                      << tol << ")";
    }
  }
}

TEST(GemmLayout, SwapsOperandsAndDimensionsKeepsTransposes) {
  float a = 0, b = 0, c = 0;
  const ColMajorGemm g = map_row_major_gemm(true, false, 3, 5, 7, &a, 11, &b, 13, &c, 17);
  EXPECT_FALSE(g.trans_first);  // cuBLAS A = our B, with B's flag
  EXPECT_TRUE(g.trans_second);  // cuBLAS B = our A, with A's flag
  EXPECT_EQ(g.m, 5);
  EXPECT_EQ(g.n, 3);
  EXPECT_EQ(g.k, 7);
  EXPECT_EQ(g.first, &b);
  EXPECT_EQ(g.ld_first, 13);
  EXPECT_EQ(g.second, &a);
  EXPECT_EQ(g.ld_second, 11);
  EXPECT_EQ(g.c, &c);
  EXPECT_EQ(g.ldc, 17);
}

TEST(GemmLayout, ColumnMajorRunMatchesRowMajorAllTransposes) {
  struct Mnk {
    int64_t m, n, k;
  };
  // Odd and skinny shapes, including the suite's vector cases (N == 1, M == 1).
  const Mnk shapes[] = {{1, 1, 1},   {2, 3, 5},   {7, 1, 13},   {1, 9, 4},    {17, 33, 9},
                        {31, 16, 1}, {64, 1, 64}, {1, 64, 100}, {10, 25, 37}, {45, 29, 70}};
  uint32_t seed = 1;
  for (const Mnk& s : shapes)
    for (int t = 0; t < 4; ++t)
      for (int64_t pad : {0, 3})
        for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{-1.5f, 0.5f}})
          check_case({(t & 1) != 0, (t & 2) != 0, s.m, s.n, s.k, pad, alpha, beta, false}, seed++);
}

TEST(GemmLayout, BetaZeroOverNaNWithPaddedLeadingDimensions) {
  uint32_t seed = 500;
  for (int t = 0; t < 4; ++t) check_case({(t & 1) != 0, (t & 2) != 0, 13, 6, 11, 5, 2.0f, 0.0f, true}, seed++);
}

}  // namespace
}  // namespace tb
