// tests/cuda_emu/test_elementwise_kernels_emu.cpp — the device code of
// kernels/cuda/elementwise_kernels.cuh (the very kernels nvcc compiles), run on the
// CPU under cuda_emu.h, against the CPU twins in kernels/cpu on fresh random data.
// Each kernel runs at the geometry its launcher in elementwise.cu computes (grid_for
// with the same constants) and at a deliberately small grid, so the grid-stride loops
// take more than one turn; reductions are also checked for run-to-run determinism.
// Tolerances: elementwise results are the same expressions (tb::scalar_math) compiled
// by the same host compiler: bitwise. Sums: the kernels add in double in a fixed tree,
// the CPU twins in another order: relative 1e-12 for double results, and column sums
// (rounded once to float on the device, accumulated in float on the CPU) 1e-5.
#include "tests/cuda_emu/cuda_emu.h"
// The kernels under test, after the emulation they compile against.
#include "kernels/cuda/elementwise_kernels.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "tests/random_vec.h"

namespace {

using tb::test::random_vec;
namespace k = tb::cuda;

// The launchers' geometry (elementwise.cu), and a small grid that forces striding.
unsigned elementwise_grid(int64_t n) { return k::grid_for(n, k::kThreads, k::kMaxBlocks); }
unsigned loss_grid(int64_t n) { return k::grid_for(n, k::kThreads, k::kMaxReduceBlocks); }
unsigned xent_grid(int64_t rows) { return k::grid_for(rows, k::kXentThreads, k::kMaxBlocks); }
unsigned column_grid(int64_t cols) { return k::grid_for(cols, k::kColTile, k::kMaxColBlocks); }
constexpr unsigned kSmallGrid = 2;

double rel(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-300); }

TEST(ElementwiseKernelsEmu, BiasActForwardEqualsCpuTwinAtBothGrids) {
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{37, 19}, {300, 7}, {1, 513}}) {
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

TEST(ElementwiseKernelsEmu, ColumnSumEqualsCpuTwinAndIsDeterministic) {
  // Columns not a multiple of the 32-column tile, rows not a multiple of the 16 lanes;
  // 70 columns at a grid of 1 make one block walk three tiles.
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{1000, 70}, {5, 33}, {16, 1}, {0, 40}}) {
    for (unsigned grid : {column_grid(cols), 1u}) {
      const std::vector<float> g = random_vec(rows * cols, 31 + static_cast<uint32_t>(rows));
      std::vector<float> want(static_cast<size_t>(cols)), got(want.size(), std::nanf("")), again = got;
      tb::cpu::column_sum(g.data(), rows, cols, want.data());
      const dim3 block(k::kColTile, k::kColLanes);
      emu::launch(grid, block, k::column_sum_kernel, g.data(), rows, cols, got.data());
      emu::launch(grid, block, k::column_sum_kernel, g.data(), rows, cols, again.data());
      for (int64_t c = 0; c < cols; ++c) {
        ASSERT_NEAR(got[c], want[c], 1e-5 * std::max(1.0f, std::fabs(want[c])))
            << rows << "x" << cols << " grid " << grid << " column " << c;
      }
      EXPECT_EQ(got, again) << "not deterministic: " << rows << "x" << cols;
    }
  }
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

TEST(ElementwiseKernelsEmu, SoftmaxXentEqualsCpuTwinAndCountsHits) {
  const int64_t rows = 333;  // 6 blocks of 64, the last partly idle
  const int classes = 10;
  const std::vector<float> z = random_vec(rows * classes, 51, -4.0f, 4.0f);
  std::vector<int32_t> labels(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) labels[r] = static_cast<int32_t>((r * 7 + 3) % classes);
  const float inv = 1.0f / static_cast<float>(rows);
  std::vector<float> want(z.size());
  int64_t want_hits = 0;
  const double want_sum =
      tb::cpu::softmax_xent_loss_grad(z.data(), labels.data(), rows, classes, inv, want.data(), &want_hits);
  ASSERT_GT(want_hits, 0);
  for (unsigned grid : {xent_grid(rows), kSmallGrid}) {
    std::vector<float> dz(z.size(), std::nanf(""));
    double sum = 0.0;
    unsigned long long hits = 0;
    emu::launch(grid, k::kXentThreads, k::softmax_xent_kernel, z.data(), labels.data(), rows, classes, inv, dz.data(),
                &sum, &hits);
    EXPECT_EQ(dz, want) << "grid " << grid;
    EXPECT_LT(rel(sum, want_sum), 1e-12) << "grid " << grid;
    EXPECT_EQ(static_cast<int64_t>(hits), want_hits) << "grid " << grid;
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
  const int64_t src_rows = 50, width = 13;
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
