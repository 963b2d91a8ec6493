// kernels/cuda/linear_step.h — the CUDA twin of kernels/cpu/linear_step.h: a linear
// layer's forward pass, MSE loss and gradients in one pass over X (the `cuda` backend's
// linear regression models where linear_mse_step_applies). Shapes: B rows, D inputs,
// O outputs; X (B x D) and T (B x O) row-major, W (O x D), b (O).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tb::cuda {

// Whether linear_mse_step takes D inputs and O outputs: 1 <= O <= 16, D <= 2048 and
// O x D <= 8192 (the block's dW partial lives in 32 KiB of shared memory, and an 8-row
// tile of X must stay in L1 between forward and backward). Wider layers keep the
// GEMM path, where a GEMM's own tiling pays off.
bool linear_mse_step_applies(int64_t d, int64_t o);

// Device bytes of the workspace linear_mse_step needs for up to `rows` rows.
int64_t linear_mse_step_workspace_bytes(int64_t rows, int64_t d, int64_t o);

// As tb::cpu::linear_mse_step: z = X W^T + b; g = 2 (z - t) inv_count; dW = g^T X and
// db = column sums of g, both overwritten (zeros when rows == 0); but the loss sum
// (sum of (z - t)^2 over rows and outputs) is ADDED into the device double *loss_sum.
// Deterministic: per-block partials summed in a fixed order (two launches, no atomics).
// Throws tb::Error when D, O do not apply, on a negative size, a null pointer or a
// workspace smaller than linear_mse_step_workspace_bytes(rows, d, o).
void linear_mse_step(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                     const float* b, float inv_count, float* dw, float* db, double* loss_sum, void* workspace,
                     int64_t workspace_bytes, cudaStream_t stream);

}  // namespace tb::cuda
