// tests/cuda_emu/test_linear_step_kernels_emu.cpp — the fused linear-regression step's
// device code (kernels/cuda/linear_step_kernels.cuh: per-block partials, then their
// fixed-order sum) run on the CPU under cuda_emu.h at the launcher's geometry, against
// a naive double loop and against its CPU twin tb::cpu::linear_mse_step. B rows, D
// inputs, O outputs. Shapes: one output, odd D and B, a batch smaller than one 8-row
// tile, B spanning several blocks with a short last block and tile, D past the 256
// threads of a block (columns loop), O = 16 at the widest D it takes.
// Tolerance (as tests/kernels/test_linear_step_cpu.cpp): float32 sums of D products
// (forward) and of B products (dW) against double, 1e-5 relative to the sum of the
// terms' magnitudes, which bounds any summation order's error at these sizes and still
// catches a wrong index, scale or dropped row; the loss 1e-5 relative. The twin is held
// to the same bound, so the two agree within twice it. Two runs are bitwise equal.
#include "tests/cuda_emu/cuda_emu.h"
// The kernels under test, after the emulation they compile against.
#include "kernels/cuda/linear_step_kernels.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/cpu/linear_step.h"
#include "tests/random_vec.h"

namespace {

using tb::test::random_vec;
namespace k = tb::cuda;

struct Shape {
  int64_t rows, d, o;
};
void PrintTo(const Shape& s, std::ostream* os) { *os << s.rows << "x" << s.d << "->" << s.o; }

struct Result {
  std::vector<float> dw, db;
  double loss = 0;
};

// The launcher's two launches (linear_step.cu), in emulation. The loss accumulator
// starts at 0.5: the finish kernel adds to it. `large` forces pass 1's 8192-weight
// shared memory where the launcher would take the 1024 one.
Result run_emulated(const std::vector<float>& x, const std::vector<float>& t, const Shape& s,
                    const std::vector<float>& w, const std::vector<float>& b, float inv, bool large = false) {
  const int64_t blocks = s.rows == 0 ? 0 : k::linear_step_blocks(s.rows, s.o);
  const int64_t width = k::linear_step_partial_width(s.d, s.o);
  std::vector<double> part(static_cast<size_t>(k::linear_step_workspace_bytes(blocks, s.d, s.o) / 8), std::nan(""));
  EXPECT_EQ(static_cast<int64_t>(part.size()), blocks * width);
  Result r;
  r.dw.assign(static_cast<size_t>(s.o * s.d), std::nanf(""));
  r.db.assign(static_cast<size_t>(s.o), std::nanf(""));
  double sum = 0.5;
  if (blocks > 0) {
    const int64_t per_block = k::linear_step_rows_per_block(s.rows, s.o);
    if (s.o * s.d <= k::kStepSmallWeights && !large) {
      emu::launch(static_cast<unsigned>(blocks), k::kStepThreads, k::linear_mse_partial_kernel<k::kStepSmallWeights>,
                  x.data(), t.data(), s.rows, s.d, s.o, w.data(), b.data(), inv, per_block, part.data());
    } else {
      emu::launch(static_cast<unsigned>(blocks), k::kStepThreads, k::linear_mse_partial_kernel<k::kStepMaxWeights>,
                  x.data(), t.data(), s.rows, s.d, s.o, w.data(), b.data(), inv, per_block, part.data());
    }
  }
  const int tile = k::linear_step_finish_tile(width);
  const dim3 block(static_cast<unsigned>(tile), static_cast<unsigned>(k::kStepFinishThreads / tile));
  emu::launch(k::grid_for(width, tile, k::kStepFinishMaxBlocks), block, k::linear_mse_finish_kernel,
              static_cast<const double*>(part.data()), blocks, s.d, s.o, r.dw.data(), r.db.data(), &sum);
  r.loss = sum - 0.5;
  return r;
}

// One ctest case per shape (each takes seconds under the emulation).
class LinearStepKernelsEmuShape : public ::testing::TestWithParam<Shape> {};

TEST_P(LinearStepKernelsEmuShape, MatchesNaiveDoubleAndTheCpuTwinAndIsDeterministic) {
  const Shape s = GetParam();
  uint32_t seed = static_cast<uint32_t>(s.rows * 7 + s.d * 3 + s.o);
  ASSERT_TRUE(k::linear_step_fits(s.d, s.o));
  const std::string at = std::to_string(s.rows) + "x" + std::to_string(s.d) + "->" + std::to_string(s.o) + " (" +
                         std::to_string(k::linear_step_blocks(s.rows, s.o)) + " blocks)";
  const std::vector<float> x = random_vec(s.rows * s.d, seed++), t = random_vec(s.rows * s.o, seed++);
  const std::vector<float> w = random_vec(s.o * s.d, seed++), b = random_vec(s.o, seed++);
  const float inv = 1.0f / static_cast<float>(s.rows * s.o);

  double want_loss = 0;
  std::vector<double> want_dw(s.o * s.d, 0.0), mag_dw(s.o * s.d, 0.0), want_db(s.o, 0.0), mag_db(s.o, 0.0);
  for (int64_t r = 0; r < s.rows; ++r) {
    for (int64_t j = 0; j < s.o; ++j) {
      double z = b[j];
      for (int64_t p = 0; p < s.d; ++p) z += double(x[r * s.d + p]) * w[j * s.d + p];
      const double diff = z - t[r * s.o + j], g = 2 * diff * inv;
      want_loss += diff * diff;
      want_db[j] += g;
      mag_db[j] += std::abs(g);
      for (int64_t p = 0; p < s.d; ++p) {
        want_dw[j * s.d + p] += g * x[r * s.d + p];
        mag_dw[j * s.d + p] += std::abs(g * x[r * s.d + p]);
      }
    }
  }

  const Result got = run_emulated(x, t, s, w, b, inv);
  Result twin;
  twin.dw.resize(want_dw.size());
  twin.db.resize(want_db.size());
  twin.loss = tb::cpu::linear_mse_step(x.data(), t.data(), s.rows, s.d, s.o, w.data(), b.data(), inv,
                                       twin.dw.data(), twin.db.data());

  EXPECT_NEAR(got.loss, want_loss, 1e-5 * want_loss + 1e-12) << at;
  EXPECT_NEAR(got.loss, twin.loss, 2e-5 * want_loss + 1e-12) << at;
  for (int64_t i = 0; i < s.o * s.d; ++i) {
    ASSERT_NEAR(got.dw[i], want_dw[i], 1e-5 * mag_dw[i] + 1e-30) << at << " dW[" << i << "]";
    ASSERT_NEAR(got.dw[i], twin.dw[i], 2e-5 * mag_dw[i] + 1e-30) << at << " dW[" << i << "] vs the CPU twin";
  }
  for (int64_t j = 0; j < s.o; ++j) {
    ASSERT_NEAR(got.db[j], want_db[j], 1e-5 * mag_db[j] + 1e-30) << at << " db[" << j << "]";
    ASSERT_NEAR(got.db[j], twin.db[j], 2e-5 * mag_db[j] + 1e-30) << at << " db[" << j << "] vs the CPU twin";
  }
  if (k::linear_step_blocks(s.rows, s.o) < 2) return;  // below: where the block order matters
  const Result again = run_emulated(x, t, s, w, b, inv);
  EXPECT_EQ(again.dw, got.dw) << at << ": not deterministic";
  EXPECT_EQ(again.db, got.db) << at;
  EXPECT_EQ(again.loss, got.loss) << at;
  if (s.o * s.d <= k::kStepSmallWeights) {  // the other instantiation: the same arithmetic
    const Result large = run_emulated(x, t, s, w, b, inv, true);
    EXPECT_EQ(large.dw, got.dw) << at << " with 8192 weights of shared memory";
    EXPECT_EQ(large.loss, got.loss) << at;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearStepKernelsEmuShape,
                         ::testing::Values(Shape{1, 1, 1}, Shape{5, 7, 1}, Shape{3, 64, 1}, Shape{300, 33, 1},
                                           Shape{400, 40, 2}, Shape{257, 19, 3}, Shape{70, 64, 16},
                                           Shape{37, 301, 5}, Shape{40, 2048, 1}, Shape{24, 512, 16}),
                         [](const ::testing::TestParamInfo<Shape>& i) {
                           return std::to_string(i.param.rows) + "x" + std::to_string(i.param.d) + "to" +
                                  std::to_string(i.param.o);
                         });

TEST(LinearStepKernelsEmu, NoRowsWritesZeroGradientsAndAddsNoLoss) {
  const Shape s{0, 9, 3};
  const std::vector<float> w = random_vec(27, 1), b = random_vec(3, 2);
  const Result got = run_emulated({}, {}, s, w, b, 1.0f);
  EXPECT_EQ(got.dw, std::vector<float>(27, 0.0f));
  EXPECT_EQ(got.db, std::vector<float>(3, 0.0f));
  EXPECT_EQ(got.loss, 0.0);
}

// The geometry the launcher and CudaModel size the workspace with.
TEST(LinearStepKernelsEmu, GeometryCoversEveryRowOnceWithinTheBlockCap) {
  for (int64_t o : {1, 3, 16}) {
    for (int64_t rows : {1, 7, 8, 31, 32, 33, 1000, 4096, 1 << 20, (1 << 20) + 13}) {
      const int64_t per = k::linear_step_rows_per_block(rows, o), blocks = k::linear_step_blocks(rows, o);
      EXPECT_EQ(per % k::kStepWarps, 0) << rows;
      EXPECT_GE(per, 2 * k::kStepWarps * std::max<int64_t>(o, 4)) << rows;  // partials ~<= 1/4 of X's bytes
      EXPECT_LE(blocks, k::kStepMaxBlocks) << rows;
      EXPECT_GE(blocks * per, rows) << rows;
      EXPECT_LT((blocks - 1) * per, rows) << rows;  // no empty block
    }
  }
  EXPECT_TRUE(k::linear_step_fits(2048, 4));
  EXPECT_TRUE(k::linear_step_fits(512, 16));
  EXPECT_FALSE(k::linear_step_fits(513, 16));   // dW partial past 32 KiB of shared memory
  EXPECT_FALSE(k::linear_step_fits(4096, 1));   // an 8-row tile past L1
  EXPECT_FALSE(k::linear_step_fits(64, 17));    // wider outputs keep the GEMM path
  EXPECT_FALSE(k::linear_step_fits(0, 1));
}

}  // namespace
