// tests/cuda_emu/test_elementwise_kernels_emu.cpp — the device code of
// kernels/cuda/elementwise_kernels.cuh (the very kernels nvcc compiles), run on the
// CPU under cuda_emu.h, against the CPU twins in kernels/cpu on fresh random data.
// Each kernel runs at the geometry its launcher in elementwise.cu computes (grid_for
// with the same constants) and at a deliberately small grid, so the grid-stride loops
// take more than one turn; reductions are also checked for run-to-run determinism.
// Tolerances: elementwise results are the same expressions (tb::scalar_math) compiled
// by the same host compiler: bitwise. Sums: the kernels add in double in a fixed tree,
// the CPU twins in another order: relative 1e-12 for double results; column sums
// against a naive double sum (rounded once: 2^-24 relative); softmax's warp sums its
// exponentials in another order than the twin: bounds derived at the test.
#include "tests/cuda_emu/cuda_emu.h"
// The kernels under test, after the emulation they compile against.
#include "kernels/cuda/elementwise_kernels.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "tests/random_vec.h"

namespace {

using tb::test::random_vec;
namespace k = tb::cuda;

// The launchers' geometry (elementwise.cu), and a small grid that forces striding.
unsigned elementwise_grid(int64_t n) { return k::grid_for(n, k::kThreads, k::kMaxBlocks); }
unsigned loss_grid(int64_t n) { return k::grid_for(n, k::kThreads, k::kMaxReduceBlocks); }
unsigned xent_grid(int64_t rows) { return k::grid_for(rows, k::kXentRowsPerBlock, k::kMaxBlocks); }
constexpr unsigned kSmallGrid = 2;

double rel(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-300); }

TEST(ElementwiseKernelsEmu, BiasActForwardEqualsCpuTwinAtBothGrids) {
  // One column (a linear model's output), widths where the grid stride is and is not a
  // multiple of N (the column carry), a row longer than a block.
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{37, 19}, {300, 7}, {1, 513}, {700, 1}, {97, 256}}) {
    for (bool relu : {false, true}) {
      for (unsigned grid : {elementwise_grid(rows * cols), kSmallGrid}) {
        const std::vector<float> bias = random_vec(cols, 11 + static_cast<uint32_t>(cols));
        std::vector<float> z = random_vec(rows * cols, 3 + static_cast<uint32_t>(rows)), want = z;
        tb::cpu::bias_act_forward(want.data(), bias.data(), rows, cols, relu);
        if (relu) {
          emu::launch(grid, k::kThreads, k::bias_act_forward_kernel<true>, z.data(), bias.data(), rows * cols, cols);
        } else {
          emu::launch(grid, k::kThreads, k::bias_act_forward_kernel<false>, z.data(), bias.data(), rows * cols, cols);
        }
        EXPECT_EQ(z, want) << rows << "x" << cols << " relu " << relu << " grid " << grid;
      }
    }
  }
}

TEST(ElementwiseKernelsEmu, ReluBackwardEqualsCpuTwin) {
  const int64_t n = 5000;
  for (unsigned grid : {elementwise_grid(n), kSmallGrid}) {
    const std::vector<float> a = random_vec(n, 21);  // about half negative: both branches
    std::vector<float> g = random_vec(n, 22), want = g;
    tb::cpu::relu_backward(want.data(), a.data(), 1, n);
    emu::launch(grid, k::kThreads, k::relu_backward_kernel, g.data(), a.data(), n);
    EXPECT_EQ(g, want) << "grid " << grid;
  }
}

// column_sum as its launcher runs it (elementwise.cu): one slice writes db; S slices
// write double partials, summed by a second launch. `tiles` overrides the column-tile
// grid (1: one block walks every tile).
std::vector<float> column_sum_emulated(const std::vector<float>& g, int64_t rows, int64_t cols, unsigned tiles = 0) {
  const int tile = k::column_tile(cols);
  const dim3 block(static_cast<unsigned>(tile), static_cast<unsigned>(k::kColThreads / tile));
  if (tiles == 0) tiles = k::column_tiles(cols);
  const int64_t slices = k::column_slices(rows, cols);
  std::vector<float> db(static_cast<size_t>(cols), std::nanf(""));
  if (slices == 1) {
    emu::launch(dim3(tiles, 1), block, k::column_sum_kernel<float, float>, g.data(), rows, cols, rows, db.data());
    return db;
  }
  std::vector<double> part(static_cast<size_t>(k::column_sum_workspace(rows, cols)), std::nan(""));
  emu::launch(dim3(tiles, static_cast<unsigned>(slices)), block, k::column_sum_kernel<float, double>, g.data(), rows,
              cols, k::ceil_div(rows, slices), part.data());
  emu::launch(dim3(tiles, 1), block, k::column_sum_kernel<double, float>, static_cast<const double*>(part.data()),
              slices, cols, slices, db.data());
  return db;
}

// Against a naive double sum: the kernel adds in double and rounds once, so it is within
// one float rounding of the exact sum (2^-24 relative) plus double rounding (B 2^-53 of
// the sum of magnitudes). The micro-benchmark shapes 4096 x 16 and 256 x 1000 (16 and 2
// row slices) and 256K x 1 for their 1M x 1 (64 slices of the one column; the GPU test
// runs 1M x 1), one tile walked by a single block, odd sizes, a single slice, no rows.
// Bitwise equal across runs (determinism).
TEST(ElementwiseKernelsEmu, ColumnSumSplitsRowsMatchesDoubleSumAndIsDeterministic) {
  struct Case {
    int64_t rows, cols;
    unsigned tiles;
  };
  for (const Case& c : {Case{1 << 18, 1, 0}, Case{4096, 16, 0}, Case{256, 1000, 0}, Case{256, 1000, 1},
                        Case{5000, 3, 0}, Case{1000, 70, 0}, Case{5, 33, 0}, Case{16, 1, 0}, Case{0, 40, 0}}) {
    const std::string at = std::to_string(c.rows) + "x" + std::to_string(c.cols) + " (" +
                           std::to_string(k::column_slices(c.rows, c.cols)) + " slices)";
    const std::vector<float> g = random_vec(c.rows * c.cols, 31 + static_cast<uint32_t>(c.rows + c.cols));
    std::vector<double> want(static_cast<size_t>(c.cols), 0.0), mag(want.size(), 0.0);
    for (int64_t r = 0; r < c.rows; ++r)
      for (int64_t j = 0; j < c.cols; ++j) {
        want[j] += g[r * c.cols + j];
        mag[j] += std::fabs(g[r * c.cols + j]);
      }
    const std::vector<float> got = column_sum_emulated(g, c.rows, c.cols, c.tiles);
    for (int64_t j = 0; j < c.cols; ++j) {
      const double tol = std::ldexp(std::fabs(want[j]), -24) + double(c.rows + 1) * std::ldexp(mag[j], -53);
      ASSERT_NEAR(got[j], want[j], tol) << at << " column " << j;
    }
    EXPECT_EQ(column_sum_emulated(g, c.rows, c.cols, c.tiles), got) << "not deterministic: " << at;
  }
}

TEST(ElementwiseKernelsEmu, ColumnSumGeometry) {
  EXPECT_EQ(k::column_tile(1), 1);
  EXPECT_EQ(k::column_tile(5), 8);
  EXPECT_EQ(k::column_tile(16), 16);
  EXPECT_EQ(k::column_tile(1000), 32);
  EXPECT_EQ(k::column_slices(1 << 20, 1), 256);  // one column still fills 256 blocks
  EXPECT_EQ(k::column_slices(4096, 16), 16);
  EXPECT_EQ(k::column_slices(256, 1000), 2);
  EXPECT_EQ(k::column_slices(1 << 24, 1), k::kMaxColSlices);
  EXPECT_EQ(k::column_slices(100, 1), 1);  // small: one launch, no workspace
  EXPECT_EQ(k::column_sum_workspace(100, 1), 0);
  EXPECT_EQ(k::column_sum_workspace(4096, 16), 16 * 16);
  // The workspace only grows with B (CudaModel sizes it for its largest batch).
  for (int64_t cols : {1, 16, 1000})
    for (int64_t rows = 1; rows < 200000; rows = rows * 3 + 1)
      EXPECT_LE(k::column_sum_workspace(rows, cols), k::column_sum_workspace(rows * 3 + 1, cols)) << rows;
}

TEST(ElementwiseKernelsEmu, MseLossGradEqualsCpuTwinAtBothGrids) {
  const int64_t n = 20000;  // 79 blocks of 256 at the launcher's grid
  const float inv = 1.0f / static_cast<float>(n);
  const std::vector<float> y = random_vec(n, 41), t = random_vec(n, 42);
  std::vector<float> want(static_cast<size_t>(n));
  const double want_sum = tb::cpu::mse_loss_grad(y.data(), t.data(), 1, n, inv, want.data());
  for (unsigned grid : {loss_grid(n), kSmallGrid}) {
    std::vector<float> grad(static_cast<size_t>(n), std::nanf(""));
    double sum = 0.25;  // the kernel adds into the accumulator
    emu::launch(grid, k::kThreads, k::mse_loss_grad_kernel, y.data(), t.data(), n, inv, grad.data(), &sum);
    EXPECT_EQ(grad, want) << "grid " << grid;
    EXPECT_LT(rel(sum - 0.25, want_sum), 1e-12) << "grid " << grid;
    double eval_only = 0.0;  // grad == nullptr: evaluation
    emu::launch(grid, k::kThreads, k::mse_loss_grad_kernel, y.data(), t.data(), n, inv, nullptr, &eval_only);
    EXPECT_LT(rel(eval_only, want_sum), 1e-12);
  }
}

// One warp per row against the CPU twin (one row at a time, sequential sums). The warp
// adds exp(z - max) in another order: each sum is within (K - 1) 2^-24 of the exact one
// (relative), so log_sum differs by <= (K + 1) 2^-24 and each p = exp(z - max - log_sum)
// by that much relative plus exp's rounding; per element |dz - dz_cpu| <= inv (p (K + 9)
// 2^-24 + 2^-23). The loss: per row the log_sum difference plus a rounding of the row
// loss. Argmax hits exactly (the same comparisons, ties to the first index: row 0
// repeats its maximum). Classes 1, 10, 33, 45, 1000 (not multiples of 32 included);
// 3 rows (fewer than the 8 warps of a block); at the launcher's grid and at a grid of
// 2 blocks, so the warps' row loop strides.
TEST(ElementwiseKernelsEmu, SoftmaxXentWarpPerRowMatchesCpuTwinAndCountsHits) {
  struct Case {
    int64_t rows;
    int classes;
  };
  for (const Case& c : {Case{150, 10}, Case{3, 10}, Case{40, 1}, Case{37, 33}, Case{29, 45}, Case{20, 1000}}) {
    const int64_t rows = c.rows;
    const int classes = c.classes;
    std::vector<float> z = random_vec(rows * classes, 51 + static_cast<uint32_t>(classes), -4.0f, 4.0f);
    if (classes > 2) z[classes - 1] = z[1] = 9.0f;  // row 0: a tie for the max
    std::vector<int32_t> labels(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) labels[r] = static_cast<int32_t>((r * 7 + 3) % classes);
    if (classes > 2) labels[0] = 1;  // the first of the tied maxima: a hit only with the first index
    const float inv = 1.0f / static_cast<float>(rows);
    std::vector<float> want(z.size());
    int64_t want_hits = 0;
    const double want_sum =
        tb::cpu::softmax_xent_loss_grad(z.data(), labels.data(), rows, classes, inv, want.data(), &want_hits);
    ASSERT_GT(want_hits, 0);
    for (unsigned grid : {xent_grid(rows), kSmallGrid}) {
      const std::string at = std::to_string(rows) + "x" + std::to_string(classes) + " grid " + std::to_string(grid);
      std::vector<float> dz(z.size(), std::nanf(""));
      double sum = 0.0;
      unsigned long long hits = 0;
      emu::launch(grid, k::kXentThreads, k::softmax_xent_kernel, z.data(), labels.data(), rows, classes, inv,
                  dz.data(), &sum, &hits);
      for (int64_t r = 0; r < rows; ++r)
        for (int j = 0; j < classes; ++j) {
          const size_t e = static_cast<size_t>(r * classes + j);
          const double p = want[e] / inv + (j == labels[r] ? 1.0 : 0.0);
          const double tol = inv * (p * (classes + 9) * std::ldexp(1.0, -24) + std::ldexp(1.0, -23));
          ASSERT_NEAR(dz[e], want[e], tol) << at << " row " << r << " class " << j;
        }
      EXPECT_NEAR(sum, want_sum, double(rows) * (classes + 9) * std::ldexp(1.0, -24) + 1e-6 * want_sum) << at;
      EXPECT_EQ(static_cast<int64_t>(hits), want_hits) << at;
    }
  }
}

TEST(ElementwiseKernelsEmu, SoftmaxXentBadLabelIsNaNAndReadsNothingOutside) {
  const int64_t rows = 70;
  const int classes = 5;
  const std::vector<float> z = random_vec(rows * classes, 61);
  std::vector<int32_t> labels(static_cast<size_t>(rows), 1);
  labels[66] = classes;  // out of range
  std::vector<float> dz(z.size(), 0.0f);
  double sum = 0.0;
  emu::launch(xent_grid(rows), k::kXentThreads, k::softmax_xent_kernel, z.data(), labels.data(), rows, classes, 0.1f,
              dz.data(), &sum, static_cast<unsigned long long*>(nullptr));
  EXPECT_TRUE(std::isnan(sum));
  for (int j = 0; j < classes; ++j) EXPECT_TRUE(std::isnan(dz[66 * classes + j]));
  EXPECT_FALSE(std::isnan(dz[65 * classes]));
}

TEST(ElementwiseKernelsEmu, SgdUpdateEqualsCpuTwinWithAndWithoutMomentum) {
  const int64_t n = 3000;
  for (unsigned grid : {elementwise_grid(n), kSmallGrid}) {
    const std::vector<float> g = random_vec(n, 71);
    std::vector<float> p = random_vec(n, 72), v = random_vec(n, 73), want_p = p, want_v = v;
    tb::cpu::sgd_update(want_p.data(), g.data(), want_v.data(), n, 0.05f, 0.9f, 1e-3f);
    emu::launch(grid, k::kThreads, k::sgd_update_kernel<true>, p.data(), g.data(), v.data(), n, 0.05f, 0.9f, 1e-3f);
    EXPECT_EQ(p, want_p) << "momentum, grid " << grid;
    EXPECT_EQ(v, want_v) << "momentum, grid " << grid;

    std::vector<float> q = random_vec(n, 74), want_q = q;
    tb::cpu::sgd_update(want_q.data(), g.data(), nullptr, n, 0.05f, 0.0f, 1e-3f);
    emu::launch(grid, k::kThreads, k::sgd_update_kernel<false>, q.data(), g.data(), static_cast<float*>(nullptr), n,
                0.05f, 0.0f, 1e-3f);
    EXPECT_EQ(q, want_q) << "plain, grid " << grid;
  }
}

TEST(ElementwiseKernelsEmu, GatherRowsAndLabelsFollowTheIndexList) {
  const int64_t src_rows = 50, width = 13;  // at a grid of 1: stride 256 = 19 rows + 9 columns (the carry)
  const std::vector<float> src = random_vec(src_rows * width, 81);
  std::vector<int32_t> src_labels(static_cast<size_t>(src_rows));
  for (int64_t r = 0; r < src_rows; ++r) src_labels[r] = static_cast<int32_t>(1000 + r);
  const std::vector<int64_t> idx = {49, 0, 7, 7, 23, 1, 48, 30, 12};
  const int64_t count = static_cast<int64_t>(idx.size());
  for (unsigned grid : {elementwise_grid(count * width), 1u}) {
    std::vector<float> dst(static_cast<size_t>(count * width), std::nanf(""));
    std::vector<int32_t> labels(static_cast<size_t>(count), -1);
    emu::launch(grid, k::kThreads, k::gather_rows_kernel, src.data(), idx.data(), count, width, dst.data());
    emu::launch(grid, k::kThreads, k::gather_labels_kernel, src_labels.data(), idx.data(), count, labels.data());
    for (int64_t i = 0; i < count; ++i) {
      for (int64_t j = 0; j < width; ++j) ASSERT_EQ(dst[i * width + j], src[idx[i] * width + j]) << i << "," << j;
      EXPECT_EQ(labels[i], 1000 + idx[i]);
    }
  }
}

// The emulation itself: a block sum over 256 threads of known values, in every lane.
TEST(ElementwiseKernelsEmu, TheEmulatedBlockSumAddsEveryThreadOnce) {
  std::vector<double> out(3, 0.0);
  auto kernel = [](double* o) {
    const double total = k::block_sum<k::kThreads>(static_cast<double>(threadIdx.x + 1) * (blockIdx.x + 1));
    if (threadIdx.x == 0) o[blockIdx.x] = total;
  };
  emu::launch(3, k::kThreads, kernel, out.data());
  for (unsigned b = 0; b < 3; ++b) EXPECT_EQ(out[b], (b + 1) * 256.0 * 257.0 / 2.0) << "block " << b;
}

}  // namespace
