// kernels/cpu/linear_step.h — a linear layer's forward pass, MSE loss and gradients
// in one pass over the batch (cpu-omp's linear regression models; CPU only).
// Shapes: B rows, D inputs, O outputs; X (B x D) and T (B x O) row-major, W (O x D)
// as PyTorch stores it, b (O). A linear model's step is memory-bound or close to it:
// the separate GEMM, loss and GEMM passes read X twice and pack it twice; here every
// row of X is read from memory once and serves both products from L1/L2.
#pragma once

#include <cstdint>
#include <string>

namespace tb::cpu {

// The widest O the one-pass sweep (linear_step.cpp) takes in this build; wider O go
// through linear_mse_step_blocked. Compiled as AVX-512 intrinsics: 88 (2 to 20 outputs all
// as dot products along D; then up to five 16-float vectors of outputs, kR rows x V vectors
// of accumulators in 32 zmm registers, the outputs past the last whole vector as dot
// products, or in a vector two rows share; from 89 on the blocked step, as six vectors, 4
// rows per sweep, lost to it at 96).
// Compiled as AVX2 intrinsics (AVX2 + FMA without AVX-512, e.g. Zen 2/3): 25 (2 to 8
// outputs as dot products along D, 4 rows x 3 outputs a sweep in 16 ymm registers; 9 to
// 25 in two or three 8-float vectors of outputs, 6 or 4 rows per sweep, up to 3 outputs
// past the vectors as dot products; from 26 on the blocked step was level or faster on
// an AMD EPYC Zen 3).
// Compiled as portable loops: 1, as the blocked step on the run-time micro-kernel ran
// 2.5 to 5x faster from 2 outputs on (-march=haswell and x86-64 builds on a Zen 5;
// docs/performance.md, issue #18).
int64_t linear_step_one_pass_max_outputs();

// z = X W^T + b;  loss = sum over rows and outputs of (z - t)^2;  g = 2 (z - t) inv_count;
// dW = g^T X (O x D) and db = column sums of g, both overwritten. inv_count is
// 1 / (global_batch * O), so shards of one batch sum to the batch mean's gradient
// (as mse_loss_grad). Returns the loss sum in double. Needs O >= 1, D >= 1, B >= 0.
// O <= linear_step_one_pass_max_outputs(): threads each take a contiguous share of the rows
// with private gradient sums, combined in thread order, so the thread count changes
// results by float rounding only. Wider: linear_mse_step_blocked.
double linear_mse_step(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                       const float* b, float inv_count, float* dw, float* db);

// The same step for any O >= 1, over blocks of rows on the GEMM micro-kernel in use
// (gemm_config()): bitwise-equal results for any thread count.
double linear_mse_step_blocked(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                               const float* b, float inv_count, float* dw, float* db);

// Rows per block of linear_mse_step_blocked.
inline constexpr int64_t kLinearStepBlockRows = 96;

// What the linear step runs here, for env.json: the one-pass sweep's code (AVX-512 or
// AVX2 intrinsics or portable loops, fixed at compile time) and the blocked step's
// micro-kernel (gemm_config(), chosen at run time).
std::string linear_step_implementation();

namespace detail {
// Throws std::invalid_argument naming `who` unless O >= 1, D >= 1 and B >= 0.
void check_linear_step_shape(const char* who, int64_t rows, int64_t d, int64_t o);
}  // namespace detail

}  // namespace tb::cpu
