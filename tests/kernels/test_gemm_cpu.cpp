// tests/kernels/test_gemm_cpu.cpp — tb::cpu::gemm against its slow twin, a naive
// triple loop in double. M, N, K as in kernels/cpu/gemm.h (C is M x N, K summed).
// Covers all four transpose combinations, alpha/beta, padded leading dimensions,
// shapes below, at and beyond the cache blocks, the skinny (M or N == 1) paths,
// beta == 0 over NaN, k == 0, and 1 vs 2 OpenMP threads, for every micro-kernel this
// CPU can run (gemm_kernels_supported(): avx512, avx512-8x48, avx2, portable on an AVX-512
// machine).
//
// Tolerance: float32 dot products of length K carry a rounding error of at most
// about K * u * sum_p |a_ip| |b_pj| (u = 2^-24, recursive summation); the kernel adds
// a few roundings per K slice and for alpha/beta. We allow
//   |C - C_ref| <= (K + 8) * 2^-23 * (|alpha| sum_p |a_ip||b_pj| + |beta| |C0_ij|) + 1e-30,
// twice that bound: rigorous for any summation order, yet a wrong index or a
// dropped term gives an O(1) relative error and fails.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/gemm.h"

namespace tb::cpu {
namespace {

struct Shape {
  int64_t m, n, k;
};

// Sets the OpenMP team size for its scope and restores the previous one afterwards.
class ThreadScope {
 public:
  explicit ThreadScope(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~ThreadScope() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

// Uses one micro-kernel for its scope, then goes back to the automatic choice.
class KernelScope {
 public:
  explicit KernelScope(const std::string& name) { set_gemm_kernel(name); }
  ~KernelScope() { set_gemm_kernel(""); }
};

std::vector<float> random_matrix(int64_t rows, int64_t ld, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * ld));
  for (float& v : x) v = u(rng);
  return x;
}

// One GEMM case: random operands stored with the given padding (ld = row length + pad),
// C pre-filled with c_fill (or random when c_fill is not given), checked element by
// element against the double reference and for untouched padding in C.
struct Case {
  bool ta = false, tb = false;
  Shape s{1, 1, 1};
  float alpha = 1.0f, beta = 0.0f;
  int64_t pad = 0;
  bool c_nan = false;  // pre-fill C with NaN (only meaningful with beta == 0)
};

// Returns C as computed by tb::cpu::gemm (the rows of C without padding, M x N).
std::vector<float> run_and_check(const Case& tc, uint32_t seed) {
  const auto [m, n, k] = tc.s;
  std::mt19937 rng(seed);
  // Storage: A is M x K (K x M when ta), B is K x N (N x K when tb).
  const int64_t a_rows = tc.ta ? k : m, a_cols = tc.ta ? m : k;
  const int64_t b_rows = tc.tb ? n : k, b_cols = tc.tb ? k : n;
  const int64_t lda = a_cols + tc.pad, ldb = b_cols + tc.pad, ldc = n + tc.pad;
  const std::vector<float> a = random_matrix(a_rows, lda, rng);
  const std::vector<float> b = random_matrix(b_rows, ldb, rng);
  std::vector<float> c = random_matrix(m, ldc, rng);
  constexpr float kSentinel = 12345.0f;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      if (j >= n) {
        c[i * ldc + j] = kSentinel;
      } else if (tc.c_nan) {
        c[i * ldc + j] = std::numeric_limits<float>::quiet_NaN();
      }
    }
  }
  // Guard rows below C: a kernel storing rows past m (an edge tile's unused rows) must
  // fail here, not corrupt the heap.
  constexpr int64_t kGuardRows = 2;
  c.resize(static_cast<size_t>((m + kGuardRows) * ldc), kSentinel);
  const std::vector<float> c0 = c;

  gemm(tc.ta, tc.tb, m, n, k, tc.alpha, a.data(), lda, b.data(), ldb, tc.beta, c.data(), ldc);

  auto op_a = [&](int64_t i, int64_t p) { return double(tc.ta ? a[p * lda + i] : a[i * lda + p]); };
  auto op_b = [&](int64_t p, int64_t j) { return double(tc.tb ? b[j * ldb + p] : b[p * ldb + j]); };
  std::vector<float> out(static_cast<size_t>(m * n));
  int failures = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0.0, mag = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        dot += op_a(i, p) * op_b(p, j);
        mag += std::fabs(op_a(i, p) * op_b(p, j));
      }
      double ref = double(tc.alpha) * dot;
      double scale = std::fabs(double(tc.alpha)) * mag;
      if (tc.beta != 0.0f) {
        ref += double(tc.beta) * double(c0[i * ldc + j]);
        scale += std::fabs(double(tc.beta) * double(c0[i * ldc + j]));
      }
      const double tol = double(k + 8) * std::ldexp(1.0, -23) * scale + 1e-30;
      const float got = c[i * ldc + j];
      out[i * n + j] = got;
      if (!(std::fabs(double(got) - ref) <= tol) && failures++ < 5)
        ADD_FAILURE() << "C(" << i << "," << j << ") = " << got << ", expected " << ref
                      << " (tol " << tol << ")";
    }
    for (int64_t j = n; j < ldc; ++j)
      if (c[i * ldc + j] != kSentinel && failures++ < 5)
        ADD_FAILURE() << "padding C(" << i << "," << j << ") was overwritten";
  }
  for (int64_t i = m * ldc; i < (m + kGuardRows) * ldc; ++i)
    if (c[i] != kSentinel && failures++ < 5) ADD_FAILURE() << "C's guard row " << i / ldc << " was overwritten";
  return out;
}

std::string describe(const Case& tc) {
  return std::string(tc.ta ? "T" : "N") + (tc.tb ? "T" : "N") + " m=" + std::to_string(tc.s.m) +
         " n=" + std::to_string(tc.s.n) + " k=" + std::to_string(tc.s.k) +
         " alpha=" + std::to_string(tc.alpha) + " beta=" + std::to_string(tc.beta) +
         " pad=" + std::to_string(tc.pad) + (tc.c_nan ? " C=NaN" : "");
}

// Odd sizes, primes, the skinny paths, and shapes beyond the blocks (micro-tile 12x32,
// 8x48 or 6x16; kc 128..1024 and nc up to 4096 from this CPU's caches, gemm_blocking();
// kPackRows 4096 in gemm.cpp) so that the edges of every loop level are hit.
const std::vector<Shape> kShapes = {
    {1, 1, 1},     {1, 1, 7},    {2, 3, 1},     {5, 7, 3},     {17, 33, 9},   {13, 1, 29},
    {1, 19, 31},   {1, 1, 300},  {12, 32, 256}, {25, 65, 257}, {65, 129, 257}, {200, 70, 530},
    {40, 600, 37}, {1024, 1, 64}, {1, 64, 1024}, {256, 10, 64}, {10, 256, 64}, {4099, 35, 5},
    {24, 64, 769}, {13, 40, 1024},  // lda = 1024: A packed, not read in place
    {20, 4150, 40},                 // N beyond the largest nc
    {9, 40, 1100},                  // K beyond the largest kc
};

// Parameters: OpenMP threads, micro-kernel name.
class GemmCpu : public ::testing::TestWithParam<std::tuple<int, std::string>> {
 protected:
  void SetUp() override {
    threads_ = std::make_unique<ThreadScope>(std::get<0>(GetParam()));
    kernel_ = std::make_unique<KernelScope>(std::get<1>(GetParam()));
  }
  void TearDown() override {
    kernel_.reset();
    threads_.reset();
  }
  std::unique_ptr<ThreadScope> threads_;
  std::unique_ptr<KernelScope> kernel_;
};

TEST_P(GemmCpu, MatchesNaiveAllTransposesAlphaBeta) {
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    for (int t = 0; t < 4; ++t) {
      for (float beta : {0.0f, 1.0f, 0.5f}) {
        Case tc;
        tc.ta = (t & 1) != 0;
        tc.tb = (t & 2) != 0;
        tc.s = s;
        tc.alpha = beta == 1.0f ? 1.0f : -1.5f;  // alpha != 1 for two of the three betas
        tc.beta = beta;
        SCOPED_TRACE(describe(tc));
        run_and_check(tc, seed++);
      }
    }
  }
}

// Every row count of a last row panel (1 .. MR, served by the MR/3, 2MR/3 and MR-row
// kernel variants) under a full panel, beside last column panels of 1 .. NR columns
// (one vector, two or three): M = MR + r, N = NR + w (w = 1, NR/2 - 1, NR/2, NR/2 + 1,
// NR - 1, NR, and either side of 16 and 32 columns within NR: the 8 x 48 tile's vector
// edges), with beta 0 and beta 0.5, A and B in both layouts, padded C (untouched padding).
TEST_P(GemmCpu, EveryEdgeTileVariant) {
  const GemmConfig& g = gemm_config();
  std::vector<int64_t> widths = {1, g.nr / 2 - 1, g.nr / 2, g.nr / 2 + 1, g.nr - 1, g.nr};
  for (const int64_t w : {15, 16, 17, 31, 32, 33}) {
    if (w <= g.nr && std::find(widths.begin(), widths.end(), w) == widths.end()) widths.push_back(w);
  }
  uint32_t seed = 500;
  for (int64_t r = 1; r <= g.mr; ++r) {
    for (const int64_t w : widths) {
      for (int t = 0; t < 4; ++t) {
        Case tc;
        tc.ta = (t & 1) != 0;
        tc.tb = (t & 2) != 0;
        tc.s = {g.mr + r, g.nr + w, 19};
        tc.alpha = 0.75f;
        tc.beta = t < 2 ? 0.0f : 0.5f;
        tc.pad = 3;
        SCOPED_TRACE(describe(tc));
        run_and_check(tc, seed++);
      }
    }
  }
}

TEST_P(GemmCpu, LeadingDimensionsLargerThanRows) {
  uint32_t seed = 100;
  for (const Shape& s : {Shape{17, 33, 9}, Shape{65, 129, 257}, Shape{1, 64, 100},
                         Shape{100, 1, 64}, Shape{30, 40, 300}}) {
    for (int t = 0; t < 4; ++t) {
      Case tc;
      tc.ta = (t & 1) != 0;
      tc.tb = (t & 2) != 0;
      tc.s = s;
      tc.alpha = 0.75f;
      tc.beta = 0.5f;
      tc.pad = 5;
      SCOPED_TRACE(describe(tc));
      run_and_check(tc, seed++);
    }
  }
}

TEST_P(GemmCpu, BetaZeroIgnoresNaNInC) {
  uint32_t seed = 200;
  for (const Shape& s : {Shape{1, 1, 1}, Shape{17, 33, 9}, Shape{65, 129, 257}, Shape{1024, 1, 64},
                         Shape{1, 64, 1024}}) {
    for (int t = 0; t < 4; ++t) {
      Case tc;
      tc.ta = (t & 1) != 0;
      tc.tb = (t & 2) != 0;
      tc.s = s;
      tc.alpha = 2.0f;
      tc.beta = 0.0f;
      tc.pad = 3;
      tc.c_nan = true;
      SCOPED_TRACE(describe(tc));
      run_and_check(tc, seed++);
    }
  }
}

// The split of C among threads never changes the order of any element's K sum, so
// the result is bitwise identical for any thread count (the harness relies on nothing
// weaker than the tolerance, but this pins down that no element is summed twice or
// skipped). Split by rows, threads take row panels other threads have not started; 3
// and 8 threads on a machine with fewer cores make that happen (threads get preempted;
// tests/kernels/test_team_work.cpp forces it).
TEST(GemmCpuThreads, AnyThreadCountBitwiseEqual) {
  for (const std::string& kernel : gemm_kernels_supported())
  for (const Shape& s : {Shape{65, 129, 257}, Shape{256, 256, 300}, Shape{200, 70, 530}, Shape{10, 700, 300}}) {
    KernelScope use(kernel);
    for (int t = 0; t < 4; ++t) {
      Case tc;
      tc.ta = (t & 1) != 0;
      tc.tb = (t & 2) != 0;
      tc.s = s;
      tc.alpha = 1.25f;
      tc.beta = 0.5f;
      SCOPED_TRACE(kernel + " " + describe(tc));
      std::vector<float> one;
      {
        ThreadScope threads(1);
        one = run_and_check(tc, 7);
      }
      for (int n : {2, 3, 8}) {
        ThreadScope threads(n);
        EXPECT_EQ(one, run_and_check(tc, 7)) << n << " threads";
      }
    }
  }
}

// The split rule (gemm.h), at the shapes that motivated it: 1024 rows split 510 : 514 in
// 6-row panels is a tie, not a reason to split by columns.
TEST(GemmCpuSplit, NearTiesAreTiesAndClearImbalancesDecide) {
  // The large MLP's forward, 6 x 16 tile, nc 192, 2 threads: rows load 514 x 192 against
  // columns 1024 x 96 (0.4% apart), within one row panel (6 x 192).
  EXPECT_TRUE(gemm_split_by_rows(1024, 192, 6, 16, 2, /*cols_on_tie=*/false));
  EXPECT_FALSE(gemm_split_by_rows(1024, 192, 6, 16, 2, /*cols_on_tie=*/true));
  // An exact tie (8-row panels) follows cols_on_tie too.
  EXPECT_TRUE(gemm_split_by_rows(1024, 192, 8, 48, 2, false));
  EXPECT_FALSE(gemm_split_by_rows(1024, 192, 8, 48, 2, true));
  // 10 rows of C: by rows one thread gets 6 of 10 (6 x 256 = 1536), by columns 8 of 16
  // panels (10 x 128 = 1280), more than one column panel (10 x 16 = 160) apart: columns.
  EXPECT_FALSE(gemm_split_by_rows(10, 256, 6, 16, 2, false));
  // 10 columns (one 16-wide panel): by columns one thread gets it all.
  EXPECT_TRUE(gemm_split_by_rows(256, 10, 6, 16, 2, true));
  // One thread: both loads equal, the tie rule decides (the split is not used then).
  EXPECT_TRUE(gemm_split_by_rows(1024, 192, 6, 16, 1, false));
  // Four threads, 1024 rows in 171 panels (42, 43, 43, 43): 258 x 192 = 49536 against
  // 1024 x 48 = 49152 by columns, within one row panel: a tie.
  EXPECT_TRUE(gemm_split_by_rows(1024, 192, 6, 16, 4, false));
  // A clear imbalance by rows: 3 threads over 2 row panels leave one idle (6 x 4096
  // against 12 x 1376 by columns).
  EXPECT_FALSE(gemm_split_by_rows(12, 4096, 6, 16, 3, false));
  // Where a thread gets one panel or less, one panel is not a tie: 6 rows, 32 columns, 2
  // threads: rows 6 x 32 (one thread idle) against columns 6 x 16.
  EXPECT_FALSE(gemm_split_by_rows(6, 32, 6, 16, 2, false));
  // 8 threads over 48 rows (8 panels) and 80 columns (5 panels): rows 6 x 80 = 480
  // against columns 48 x 16 = 768 (three threads idle): rows, even where ties go by columns.
  EXPECT_TRUE(gemm_split_by_rows(48, 80, 6, 16, 8, true));
}

TEST(GemmCpuEdge, KZeroScalesC) {
  std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  const float dummy = std::numeric_limits<float>::quiet_NaN();  // A and B must not be read
  gemm(false, false, 2, 3, 0, 1.0f, &dummy, 1, &dummy, 3, 0.5f, c.data(), 3);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f}));

  std::vector<float> nan_c(6, std::numeric_limits<float>::quiet_NaN());
  gemm(true, true, 2, 3, 0, 1.0f, &dummy, 2, &dummy, 1, 0.0f, nan_c.data(), 3);
  EXPECT_EQ(nan_c, std::vector<float>(6, 0.0f));
}

TEST(GemmCpuEdge, AlphaZeroDoesNotReadAB) {
  const std::vector<float> nan_ab(12, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> c = {1.0f, -2.0f, 4.0f, 8.0f};
  gemm(false, false, 2, 2, 3, 0.0f, nan_ab.data(), 3, nan_ab.data(), 2, 0.25f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.25f, -0.5f, 1.0f, 2.0f}));
}

TEST(GemmCpuEdge, EmptyAndInvalidArguments) {
  float x = 1.0f;
  EXPECT_NO_THROW(gemm(false, false, 0, 5, 5, 1.0f, &x, 5, &x, 5, 0.0f, &x, 5));
  EXPECT_NO_THROW(gemm(false, false, 5, 0, 5, 1.0f, &x, 5, &x, 5, 0.0f, &x, 1));
  EXPECT_EQ(x, 1.0f);
  EXPECT_THROW(gemm(false, false, -1, 1, 1, 1.0f, &x, 1, &x, 1, 0.0f, &x, 1), std::invalid_argument);
  EXPECT_THROW(gemm(false, false, 2, 2, 3, 1.0f, &x, 2, &x, 2, 0.0f, &x, 2), std::invalid_argument);
  EXPECT_THROW(gemm(false, true, 2, 2, 3, 1.0f, &x, 3, &x, 2, 0.0f, &x, 2), std::invalid_argument);
  EXPECT_THROW(gemm(false, false, 2, 4, 3, 1.0f, &x, 3, &x, 4, 0.0f, &x, 3), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(ThreadsKernels, GemmCpu,
                         ::testing::Combine(::testing::Values(1, 2), ::testing::ValuesIn(gemm_kernels_supported())),
                         [](const ::testing::TestParamInfo<std::tuple<int, std::string>>& info) {
                           std::string k = std::get<1>(info.param);  // a test name has no '-'
                           std::replace(k.begin(), k.end(), '-', '_');
                           return std::to_string(std::get<0>(info.param)) + "thread_" + k;
                         });

}  // namespace
}  // namespace tb::cpu
