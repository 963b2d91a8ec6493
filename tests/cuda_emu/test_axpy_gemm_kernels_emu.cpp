// tests/cuda_emu/test_axpy_gemm_kernels_emu.cpp — the device code of
// kernels/cuda/axpy_kernels.cuh and gemm_kernels.cuh run on the CPU under cuda_emu.h
// (see test_elementwise_kernels_emu.cpp), at the launchers' geometry and at a small
// grid that makes the loops stride. Both are one float operation per element:
// bitwise equal to the CPU twin / the naive loop.
#include "tests/cuda_emu/cuda_emu.h"
// The kernels under test, after the emulation they compile against.
#include "kernels/cuda/axpy_kernels.cuh"
#include "kernels/cuda/gemm_kernels.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "kernels/cpu/axpy.h"
#include "tests/random_vec.h"

namespace {

using tb::test::random_vec;
namespace k = tb::cuda;

TEST(AxpyGemmKernelsEmu, AddInplaceEqualsCpuTwinAtBothGrids) {
  for (int64_t n : {1, 255, 257, 4000}) {
    for (unsigned grid : {k::grid_for(n, k::kAxpyThreads, k::kAxpyMaxBlocks), 2u}) {
      const std::vector<float> src = random_vec(n, 5 + static_cast<uint32_t>(n));
      std::vector<float> dst = random_vec(n, 6 + static_cast<uint32_t>(n)), want = dst;
      tb::cpu::add_inplace(want.data(), src.data(), n);
      emu::launch(grid, k::kAxpyThreads, k::add_inplace_kernel, dst.data(), src.data(), n);
      EXPECT_EQ(dst, want) << "n " << n << " grid " << grid;
    }
  }
}

// C (m x n, row stride ldc > n) = beta C over the valid part; padding keeps its bits
// (NaN there), beta == 0 writes zeros even over NaN.
// Shapes: the grid stride (256 at a grid of 1) is 13 rows + 9 columns of 19, a whole
// number of rows of 1 and of 256 columns, and 1 row + 56 columns of 200 (the carry).
TEST(AxpyGemmKernelsEmu, ScaleCTouchesOnlyTheValidPartAndZeroesOverNaN) {
  for (const auto& [m, n, ldc] : {std::tuple<int64_t, int64_t, int64_t>{37, 19, 23}, {300, 1, 2}, {5, 256, 256},
                                  {9, 200, 203}})
  for (float beta : {0.5f, 0.0f, -2.0f}) {
    for (unsigned grid : {k::grid_for(m * n, k::kScaleThreads, k::kScaleMaxBlocks), 1u}) {
      std::vector<float> c = random_vec(m * ldc, 9);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = n; j < ldc; ++j) c[i * ldc + j] = std::nanf("");
      if (beta == 0.0f) c[(m / 2) * ldc + n / 2] = std::nanf("");
      const std::vector<float> start = c;
      emu::launch(grid, k::kScaleThreads, k::scale_c_kernel, c.data(), m, n, ldc, beta);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const float was = start[i * ldc + j], now = c[i * ldc + j];
          if (j >= n) {
            ASSERT_EQ(std::memcmp(&now, &was, sizeof now), 0) << "padding " << i << "," << j;
          } else {
            ASSERT_EQ(now, beta == 0.0f ? 0.0f : beta * was) << "beta " << beta << " at " << i << "," << j;
          }
        }
    }
  }
}

}  // namespace
