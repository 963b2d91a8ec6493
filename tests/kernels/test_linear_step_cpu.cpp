// tests/kernels/test_linear_step_cpu.cpp — the fused linear-regression step
// (tb::cpu::linear_mse_step) against its slow twin in double: z = X W^T + b, the
// squared-error sum, g = 2 (z - t) inv, dW = g^T X, db = column sums of g. Shapes
// around the vector widths (D and O at 1, 15, 16, 17, 32, 33, 47, 48, 49, 64), the
// one-pass sweep's dot-form outputs (O = 2 to 20 all of them, 6-row blocks, 4 outputs a
// sweep; O = 33, 34, 49, 50, 65 to 67, 81 to 83 past whole vectors; D around
// 16, also above the parallel threshold with D and row tails), the outputs two rows share
// in one vector (O = 21 to 24, 35 to 40, 51 to 56, 68 to 72, 84 to 88, with row tails and
// every block size), four vectors (O = 52 to 67, 6-row blocks) and five (73 to 88, 4-row
// blocks), row counts around the blocks, both sides of the parallel threshold, 1, 2 and
// 3 threads, and a narrower O after a wider one with the same vector count (the reused
// W^T's padding lanes must be zeroed again). Compiled for AVX2 without AVX-512, 8-float
// vectors instead: all dot form to O = 8, then two vectors (O = 9 to 16, 6-row blocks),
// with 1 to 3 outputs in dot form (17 to 19), three (20 to 24, 4-row blocks), with one in
// dot form (25), the blocked path from 26. The blocked path (past the sweep, or called
// directly for any O) also around its 96-row blocks, the micro-tiles (12 x 32, 6 x 16)
// and the forward's K slices, on every GEMM kernel this CPU runs, bitwise equal for 1, 2,
// 3 and 8 threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear_step.h"
#include "tests/random_vec.h"

namespace tb::cpu {
namespace {

class ThreadScope {
 public:
  explicit ThreadScope(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~ThreadScope() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

using tb::test::random_vec;

struct Shape {
  int64_t rows, d, o;
};

class LinearStepCpu : public ::testing::TestWithParam<int> {};  // parameter: threads

using StepFn = double (*)(const float*, const float*, int64_t, int64_t, int64_t, const float*, const float*, float,
                          float*, float*);

// float32 sums of D products (forward) and B products (dW) against double: relative
// error ~ sqrt(n) * 6e-8 typically; 1e-5 relative to the sum of magnitudes (which
// bounds any summation order's error at these sizes) leaves margin and still catches
// a wrong index, scale or dropped row.
void expect_matches_naive(StepFn step, const Shape& s) {
  const std::vector<float> x = random_vec(s.rows * s.d, 1), t = random_vec(s.rows * s.o, 2);
  const std::vector<float> w = random_vec(s.o * s.d, 3), b = random_vec(s.o, 4);
  const float inv = 1.0f / static_cast<float>(s.rows * s.o);
  std::vector<float> dw(s.o * s.d, 123.0f), db(s.o, 123.0f);  // overwritten, not accumulated
  const double loss = step(x.data(), t.data(), s.rows, s.d, s.o, w.data(), b.data(), inv, dw.data(), db.data());

  double want_loss = 0;
  std::vector<double> g(s.rows * s.o), want_dw(s.o * s.d, 0.0), mag_dw(s.o * s.d, 0.0);
  std::vector<double> want_db(s.o, 0.0), mag_db(s.o, 0.0);
  for (int64_t r = 0; r < s.rows; ++r) {
    for (int64_t j = 0; j < s.o; ++j) {
      double z = b[j];
      for (int64_t p = 0; p < s.d; ++p) z += double(x[r * s.d + p]) * w[j * s.d + p];
      const double diff = z - t[r * s.o + j];
      want_loss += diff * diff;
      g[r * s.o + j] = 2 * diff * inv;
      want_db[j] += g[r * s.o + j];
      mag_db[j] += std::abs(g[r * s.o + j]);
      for (int64_t p = 0; p < s.d; ++p) {
        want_dw[j * s.d + p] += g[r * s.o + j] * x[r * s.d + p];
        mag_dw[j * s.d + p] += std::abs(g[r * s.o + j] * x[r * s.d + p]);
      }
    }
  }
  const std::string at = std::to_string(s.rows) + "x" + std::to_string(s.d) + "->" + std::to_string(s.o);
  EXPECT_NEAR(loss, want_loss, 1e-5 * want_loss + 1e-12) << at;
  for (int64_t i = 0; i < s.o * s.d; ++i) {
    ASSERT_NEAR(dw[i], want_dw[i], 1e-5 * mag_dw[i] + 1e-30) << at << " dW[" << i << "]";
  }
  for (int64_t j = 0; j < s.o; ++j) ASSERT_NEAR(db[j], want_db[j], 1e-5 * mag_db[j] + 1e-30) << at << " db";
}

TEST_P(LinearStepCpu, MatchesNaiveDouble) {
  ThreadScope threads(GetParam());
  const std::vector<Shape> shapes = {{1, 1, 1},    {7, 5, 1},    {9, 64, 1},   {1024, 64, 1},  {600, 100, 1},
                                     {8, 16, 2},   {17, 33, 3},  {16, 15, 16}, {100, 1, 16},   {257, 64, 16},
                                     {513, 1024, 16}, {40, 200, 9},
                                     // two or three vectors of outputs, padded ones (25 to 31, 41 to 47),
                                     // above the parallel threshold too; D < 16 there leaves a thread an
                                     // empty slice of D (O = 19 and 20 here: all in dot form now)
                                     {9, 65, 32}, {16, 128, 48}, {23, 17, 47}, {29, 47, 19}, {19, 33, 29},
                                     {1030, 40, 27}, {40000, 1, 20}, {5000, 7, 34},
                                     // past whole vectors: 1 output (2 from two vectors on) as dot
                                     // products, 2 to 8 in a vector two rows share (these shapes were
                                     // all dot form before the shared vector; kept as they are; O = 17
                                     // and 18 are all dot form now); the last four above the parallel
                                     // threshold: D and W split, row tails
                                     {37, 20, 17}, {70, 33, 33}, {23, 17, 49}, {8, 16, 18}, {31, 100, 35},
                                     {17, 15, 34}, {13, 1, 51}, {41, 18, 50}, {300, 64, 33}, {1101, 33, 35},
                                     {2051, 17, 51}, {1101, 33, 33}, {2049, 17, 50},
                                     // 2 to 8 outputs past whole vectors in a vector two rows share (row
                                     // tails leave the last pair half empty; 6-row blocks from 51); then
                                     // narrower or padded O reusing the same W^T lanes (stale twin halves)
                                     {9, 40, 21}, {15, 17, 22}, {23, 33, 24}, {17, 65, 35}, {7, 3, 37},
                                     {8, 100, 40}, {25, 33, 52}, {19, 50, 53}, {6, 64, 56}, {12, 30, 56},
                                     {13, 29, 53}, {10, 20, 40}, {21, 19, 37}, {11, 21, 41}, {1101, 33, 40},
                                     {2053, 17, 56}, {1027, 40, 19}, {1027, 40, 23},
                                     // four vectors (6-row blocks), with dot-form outputs from 65; 63
                                     // after 64 reuses W^T with a stale lane 63
                                     {23, 17, 52}, {65, 300, 64}, {29, 31, 63}, {97, 40, 65}, {11, 16, 66},
                                     {1101, 33, 67}, {2053, 17, 60},
                                     // four vectors and a shared one (4-row blocks, so row tails of 1 to 3),
                                     // five vectors padded, whole, with 1 to 3 in dot form, with a shared
                                     // one; narrower after wider (stale lanes); above the threshold
                                     {7, 19, 68}, {13, 33, 72}, {6, 17, 73}, {9, 40, 79}, {11, 16, 80},
                                     {5, 31, 81}, {14, 18, 83}, {15, 33, 84}, {10, 20, 88}, {11, 21, 85},
                                     {12, 22, 77}, {1101, 33, 70}, {2053, 17, 88}, {1030, 40, 75}, {1027, 33, 82},
                                     // 4-row blocks sharing one backward, 8 rows: whole (8, 16), with a
                                     // block and a row after; D below, at and one past its 2 columns
                                     {8, 1, 80}, {16, 2, 72}, {21, 3, 85}, {8, 5, 81}, {17, 1, 70}, {13, 3, 82},
                                     // 2 to 20 outputs all in dot form, 6-row blocks: 4 outputs a sweep,
                                     // 5, 7, 13, 17 and 18 in uneven sweeps; row tails of 1 to 5; D
                                     // below, at and past a vector; above the parallel threshold
                                     {5, 17, 4}, {6, 16, 5}, {13, 33, 7}, {11, 1, 8}, {7, 15, 12}, {17, 40, 13},
                                     {12, 64, 15}, {23, 31, 17}, {9, 18, 18}, {14, 47, 20}, {1031, 33, 13},
                                     {2053, 17, 20}, {4099, 9, 6},
                                     // AVX2's vector forms (above): 2 and 3 vectors, padded or with
                                     // dot-form outputs, D around 8 and row tails around 6 and 4;
                                     // the last three above the parallel threshold
                                     {13, 9, 9}, {7, 8, 10}, {19, 23, 16}, {11, 1, 17}, {17, 7, 18},
                                     {9, 40, 19}, {5, 8, 21}, {6, 9, 24}, {7, 15, 25}, {1031, 33, 18},
                                     {2053, 17, 25}, {4099, 9, 11},
                                     // wider: the blocked path
                                     {3, 19, 89}, {1, 3, 100}, {200, 129, 130}};
  for (const Shape& s : shapes) expect_matches_naive(linear_mse_step, s);
}

// The blocked path for any O, on each kernel: rows around its 96-row blocks and the
// micro-tile rows (12, 8, 6), D + 1 around the tile rows and past one K slice (kc <= 1024),
// O around the 48-, 32- and 16-wide panels.
class LinearStepBlocked : public ::testing::TestWithParam<std::string> {
 protected:
  void TearDown() override { set_gemm_kernel(""); }
};

TEST_P(LinearStepBlocked, MatchesNaiveDoubleOnEveryKernel) {
  set_gemm_kernel(GetParam());
  const std::vector<Shape> shapes = {{1, 1, 1},     {5, 11, 1},    {13, 12, 2},  {95, 13, 16},  {96, 23, 17},
                                     {97, 24, 31},  {193, 35, 32}, {40, 1, 33},  {250, 64, 65}, {31, 1100, 40},
                                     {100, 2050, 3}, {12, 7, 97},
                                     // the 8 x 48 tile's panels: O = 47, 48, 49, 96; rows and D + 1 around 8
                                     {9, 7, 47},     {17, 8, 48},   {25, 15, 49}, {8, 16, 96}};
  for (const int threads : {1, 2}) {
    ThreadScope scope(threads);
    for (const Shape& s : shapes) expect_matches_naive(linear_mse_step_blocked, s);
  }
}

// Every sum in the blocked path has one order whatever the team or whoever runs a row
// group or tile: bitwise equal. Both shapes are above the parallel threshold (B D O >=
// 2^19 multiply-adds); the second has fewer row groups than threads (5 rows: a single
// group on every kernel), so all but one thread sit out the forward, and it is checked against
// naive double at 3 threads too. 3 and 8 threads on fewer cores get preempted, so threads
// take runs from each other's shares.
TEST_P(LinearStepBlocked, BitwiseEqualForAnyTeamSize) {
  set_gemm_kernel(GetParam());
  for (const Shape& s : {Shape{1000, 130, 70}, Shape{5, 1000, 200}}) {  // 10 blocks + 40 rows; one short block
    const std::vector<float> x = random_vec(s.rows * s.d, 5), t = random_vec(s.rows * s.o, 6);
    const std::vector<float> w = random_vec(s.o * s.d, 7), b = random_vec(s.o, 8);
    const int teams[] = {1, 2, 3, 8};
    std::vector<std::vector<float>> dw(4, std::vector<float>(s.o * s.d)), db(4, std::vector<float>(s.o));
    double loss[4];
    for (int k = 0; k < 4; ++k) {
      ThreadScope scope(teams[k]);
      loss[k] = linear_mse_step_blocked(x.data(), t.data(), s.rows, s.d, s.o, w.data(), b.data(),
                                        1.0f / (s.rows * s.o), dw[k].data(), db[k].data());
    }
    for (int k = 1; k < 4; ++k) {
      EXPECT_EQ(loss[k], loss[0]) << teams[k] << " threads, " << s.rows << "x" << s.d << "->" << s.o;
      EXPECT_EQ(dw[k], dw[0]) << teams[k] << " threads, " << s.rows << "x" << s.d << "->" << s.o;
      EXPECT_EQ(db[k], db[0]) << teams[k] << " threads, " << s.rows << "x" << s.d << "->" << s.o;
    }
  }
  ThreadScope three(3);
  expect_matches_naive(linear_mse_step_blocked, Shape{5, 1000, 200});
}

INSTANTIATE_TEST_SUITE_P(Kernels, LinearStepBlocked, ::testing::ValuesIn(gemm_kernels_supported()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string k = i.param;  // a test name has no '-'
                           std::replace(k.begin(), k.end(), '-', '_');
                           return k;
                         });

TEST_P(LinearStepCpu, NoRowsGivesZeroGradients) {
  ThreadScope threads(GetParam());
  // one-pass; dot form; a shared vector; 4 vectors; 5 vectors + a shared one; blocked;
  // AVX2: 2 vectors + 1 dot, 3 vectors + 1 dot
  for (const int64_t o : {int64_t{3}, int64_t{33}, int64_t{40}, int64_t{60}, int64_t{88}, int64_t{90}, int64_t{17},
                          int64_t{25}}) {
    const std::vector<float> w = random_vec(o * 4, 1), b = random_vec(o, 2);
    std::vector<float> dw(o * 4, 5.0f), db(o, 5.0f);
    EXPECT_EQ(linear_mse_step(nullptr, nullptr, 0, 4, o, w.data(), b.data(), 1.0f, dw.data(), db.data()), 0.0);
    EXPECT_EQ(dw, std::vector<float>(o * 4, 0.0f)) << "O = " << o;
    EXPECT_EQ(db, std::vector<float>(o, 0.0f)) << "O = " << o;
  }
}

TEST(LinearStepCpuThreads, OneAndTwoThreadsAgreeToRounding) {
  for (const int64_t o : {int64_t{1}, int64_t{7}, int64_t{16}, int64_t{17}, int64_t{19}, int64_t{20}, int64_t{24},
                          int64_t{25}, int64_t{33}, int64_t{40}, int64_t{50}, int64_t{56}, int64_t{64}, int64_t{67},
                          int64_t{72}, int64_t{83}, int64_t{88}, int64_t{100}}) {
    SCOPED_TRACE("O = " + std::to_string(o));
    const int64_t rows = 4096, d = 64;  // above the parallel threshold
    const std::vector<float> x = random_vec(rows * d, 5), t = random_vec(rows * o, 6);
    const std::vector<float> w = random_vec(o * d, 7), b = random_vec(o, 8);
    std::vector<float> dw1(o * d), db1(o), dw2(o * d), db2(o);
    double l1, l2;
    {
      ThreadScope one(1);
      l1 = linear_mse_step(x.data(), t.data(), rows, d, o, w.data(), b.data(), 1.0f / (rows * o), dw1.data(), db1.data());
    }
    {
      ThreadScope two(2);
      l2 = linear_mse_step(x.data(), t.data(), rows, d, o, w.data(), b.data(), 1.0f / (rows * o), dw2.data(), db2.data());
    }
    EXPECT_NEAR(l1, l2, 1e-9 * l1);
    for (int64_t i = 0; i < o * d; ++i) ASSERT_NEAR(dw1[i], dw2[i], 1e-5 * (std::abs(dw1[i]) + 1e-3)) << i;
    for (int64_t j = 0; j < o; ++j) ASSERT_NEAR(db1[j], db2[j], 1e-5 * (std::abs(db1[j]) + 1e-3)) << "db " << j;
  }
}

TEST(LinearStepCpuEdge, RejectsUnsupportedShapes) {
  float v = 0;
  EXPECT_THROW(linear_mse_step(&v, &v, 1, 1, 0, &v, &v, 1.0f, &v, &v), std::invalid_argument);
  EXPECT_THROW(linear_mse_step_blocked(&v, &v, 1, 1, 0, &v, &v, 1.0f, &v, &v), std::invalid_argument);
  EXPECT_THROW(linear_mse_step_blocked(&v, &v, 1, 0, 70, &v, &v, 1.0f, &v, &v), std::invalid_argument);
  EXPECT_THROW(linear_mse_step_blocked(&v, &v, -1, 1, 70, &v, &v, 1.0f, &v, &v), std::invalid_argument);
  EXPECT_THROW(linear_mse_step(&v, &v, 1, 0, 1, &v, &v, 1.0f, &v, &v), std::invalid_argument);
  EXPECT_THROW(linear_mse_step(&v, &v, -1, 1, 1, &v, &v, 1.0f, &v, &v), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Threads, LinearStepCpu, ::testing::Values(1, 2, 3),
                         [](const ::testing::TestParamInfo<int>& i) { return "t" + std::to_string(i.param); });

}  // namespace
}  // namespace tb::cpu
