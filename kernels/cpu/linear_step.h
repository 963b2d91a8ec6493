// kernels/cpu/linear_step.h — a linear layer's forward pass, MSE loss and gradients
// in one pass over the batch (cpu-omp's linear regression models; CPU only).
// Shapes: B rows, D inputs, O outputs; X (B x D) and T (B x O) row-major, W (O x D)
// as PyTorch stores it, b (O). A linear model's step is memory-bound: the separate
// GEMM, loss and GEMM passes read X twice and pay three kernel launches; here every
// row of X is read from memory once, while it sits in L1 for both products.
#pragma once

#include <cstdint>

namespace tb::cpu {

// The widest output count linear_mse_step handles (outputs padded to whole 16-float
// vectors, at most four: kR rows x V vectors of accumulators stay in 32 zmm registers).
inline constexpr int64_t kLinearStepMaxOutputs = 64;

// z = X W^T + b;  loss = sum over rows and outputs of (z - t)^2;  g = 2 (z - t) inv_count;
// dW = g^T X (O x D) and db = column sums of g, both overwritten. inv_count is
// 1 / (global_batch * O), so shards of one batch sum to the batch mean's gradient
// (as mse_loss_grad). Returns the loss sum in double. Needs 1 <= O <= 64.
// Threads: each takes a contiguous share of the rows with private gradient sums,
// combined in thread order; the thread count changes results by float rounding only.
double linear_mse_step(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                       const float* b, float inv_count, float* dw, float* db);

}  // namespace tb::cpu
