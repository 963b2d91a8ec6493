// kernels/cuda/elementwise.h — CUDA twins of kernels/cpu/elementwise.h: same
// names and argument order, the stream last (column_sum adds its workspace before it). The scalar math is the shared
// kernels/scalar_math.h. Losses cannot be returned without a host sync, so the
// CUDA versions ADD their sums into device accumulators (loss_sum, correct) that
// the caller zeroes and reads when it chooses. Shapes: B rows, N columns, K classes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tb::cuda {

void bias_act_forward(float* z, const float* bias, int64_t rows, int64_t cols, bool relu, cudaStream_t stream);
void relu_backward(float* grad, const float* a, int64_t rows, int64_t cols, cudaStream_t stream);
// db (N) = column sums of g (B x N), overwriting db; deterministic (fixed order per
// column). Rows are split over blocks as well as columns, so one column (a linear
// model's bias) still fills the GPU: each row slice writes double partials into
// `workspace` (column_sum_workspace_elems doubles; 0, and workspace may be null, when
// B is small enough for one slice), summed by a second launch.
int64_t column_sum_workspace_elems(int64_t rows, int64_t cols);
void column_sum(const float* g, int64_t rows, int64_t cols, float* db, double* workspace, int64_t workspace_elems,
                cudaStream_t stream);
// grad = 2 (y - t) * inv_count (grad may be nullptr); *loss_sum += sum (y - t)^2.
void mse_loss_grad(const float* y, const float* t, int64_t rows, int64_t cols, float inv_count, float* grad,
                   double* loss_sum, cudaStream_t stream);
// dz = (softmax(z) - onehot) * inv_rows (dz may be nullptr); *loss_sum += sum -log p[label];
// *correct += argmax hits (correct may be nullptr).
void softmax_xent_loss_grad(const float* z, const int32_t* labels, int64_t rows, int64_t k, float inv_rows, float* dz,
                            double* loss_sum, unsigned long long* correct, cudaStream_t stream);
void sgd_update(float* p, const float* g, float* v, int64_t n, float lr, float momentum, float weight_decay,
                cudaStream_t stream);
// dst (count x width) = rows `rows[i]` of src (n x width): the shuffled batch gather.
void gather_rows(const float* src, const int64_t* rows, int64_t count, int64_t width, float* dst, cudaStream_t stream);
void gather_labels(const int32_t* src, const int64_t* rows, int64_t count, int32_t* dst, cudaStream_t stream);
// Loads every kernel of elementwise.cu on the current device (cudaFuncGetAttributes),
// so that none is first loaded inside a CUDA graph capture (step_loss.h).
void preload_elementwise_kernels();

}  // namespace tb::cuda
