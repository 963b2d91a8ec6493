// kernels/cuda/elementwise.cu — CUDA twins of kernels/cpu/elementwise.cpp (same
// names, argument order, stream last). B rows, N columns, K classes. Per-element
// math is tb:: in kernels/scalar_math.h, the templates the CPU twins call; results
// may differ from the host's in the last bit where one compiler contracts a * b + c
// into an FMA and the other does not, in expf/logf (device vs glibc), and where a
// warp sums in another order (softmax's sum of exponentials).
// Three layers per op: static __global__ *_kernel (elementwise_kernels.cuh, where
// tests/cuda_emu runs them on the CPU) -> static launch_* (grid via grid_for, capped;
// grid-stride loops; 64-bit indices, no 64-bit division per element) -> public op (validates).
// No allocation, no host synchronisation: every op is stream-ordered and capturable.
#include "kernels/cuda/elementwise.h"

#include <algorithm>
#include <climits>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/elementwise_kernels.cuh"
#include "kernels/error.h"
#include "kernels/scalar_math.h"

namespace tb::cuda {

// ---- launchers (sizes already validated and non-empty) ------------------------------------
static void launch_bias_act_forward(float* z, const float* bias, int64_t n, int64_t cols, bool relu,
                                    cudaStream_t stream) {
  const unsigned grid = grid_for(n, kThreads, kMaxBlocks);
  if (relu) {
    bias_act_forward_kernel<true><<<grid, kThreads, 0, stream>>>(z, bias, n, cols);
  } else {
    bias_act_forward_kernel<false><<<grid, kThreads, 0, stream>>>(z, bias, n, cols);
  }
  TB_CUDA_CHECK_LAUNCH();
}

static void launch_relu_backward(float* grad, const float* a, int64_t n, cudaStream_t stream) {
  relu_backward_kernel<<<grid_for(n, kThreads, kMaxBlocks), kThreads, 0, stream>>>(grad, a, n);
  TB_CUDA_CHECK_LAUNCH();
}

// One slice: db directly. S slices: double partials (S x N) into the workspace, then
// the same kernel over those S rows in one slice.
static void launch_column_sum(const float* g, int64_t rows, int64_t cols, float* db, double* workspace,
                              cudaStream_t stream) {
  const int tile = column_tile(cols);
  const dim3 block(static_cast<unsigned>(tile), static_cast<unsigned>(kColThreads / tile));
  const int64_t slices = column_slices(rows, cols);
  if (slices == 1) {
    column_sum_kernel<float, float><<<dim3(column_tiles(cols), 1), block, 0, stream>>>(g, rows, cols, rows, db);
    TB_CUDA_CHECK_LAUNCH();
    return;
  }
  const int64_t slice_rows = ceil_div(rows, slices);
  column_sum_kernel<float, double><<<dim3(column_tiles(cols), static_cast<unsigned>(slices)), block, 0, stream>>>(
      g, rows, cols, slice_rows, workspace);
  TB_CUDA_CHECK_LAUNCH();
  column_sum_kernel<double, float><<<dim3(column_tiles(cols), 1), block, 0, stream>>>(workspace, slices, cols, slices,
                                                                                      db);
  TB_CUDA_CHECK_LAUNCH();
}

static void launch_mse_loss_grad(const float* y, const float* t, int64_t n, float inv_count, float* grad,
                                 double* loss_sum, cudaStream_t stream) {
  mse_loss_grad_kernel<<<grid_for(n, kThreads, kMaxReduceBlocks), kThreads, 0, stream>>>(y, t, n, inv_count, grad,
                                                                                         loss_sum);
  TB_CUDA_CHECK_LAUNCH();
}

static void launch_softmax_xent(const float* z, const int32_t* labels, int64_t rows, int k, float inv_rows, float* dz,
                                double* loss_sum, unsigned long long* correct, cudaStream_t stream) {
  softmax_xent_kernel<<<grid_for(rows, kXentRowsPerBlock, kMaxBlocks), kXentThreads, 0, stream>>>(
      z, labels, rows, k, inv_rows, dz, loss_sum, correct);
  TB_CUDA_CHECK_LAUNCH();
}

static void launch_sgd_update(float* p, const float* g, float* v, int64_t n, float lr, float momentum,
                              float weight_decay, cudaStream_t stream) {
  const unsigned grid = grid_for(n, kThreads, kMaxBlocks);
  if (momentum != 0.0f) {
    sgd_update_kernel<true><<<grid, kThreads, 0, stream>>>(p, g, v, n, lr, momentum, weight_decay);
  } else {
    sgd_update_kernel<false><<<grid, kThreads, 0, stream>>>(p, g, v, n, lr, momentum, weight_decay);
  }
  TB_CUDA_CHECK_LAUNCH();
}

static void launch_gather_rows(const float* src, const int64_t* rows, int64_t count, int64_t width, float* dst,
                               cudaStream_t stream) {
  gather_rows_kernel<<<grid_for(count * width, kThreads, kMaxBlocks), kThreads, 0, stream>>>(src, rows, count, width,
                                                                                             dst);
  TB_CUDA_CHECK_LAUNCH();
}

static void launch_gather_labels(const int32_t* src, const int64_t* rows, int64_t count, int32_t* dst,
                                 cudaStream_t stream) {
  gather_labels_kernel<<<grid_for(count, kThreads, kMaxBlocks), kThreads, 0, stream>>>(src, rows, count, dst);
  TB_CUDA_CHECK_LAUNCH();
}

// ---- validation -----------------------------------------------------------------------------
[[noreturn]] static void fail(const char* op, const std::string& what) {
  throw tb::Error(std::string("tb::cuda::") + op + ": " + what);
}

// rows, cols >= 0 and rows * cols representable; returns rows * cols.
static int64_t checked_elems(const char* op, const char* rows_name, int64_t rows, const char* cols_name, int64_t cols) {
  if (rows < 0 || cols < 0)
    fail(op, std::string("negative size ") + rows_name + " = " + std::to_string(rows) + ", " + cols_name + " = " +
                 std::to_string(cols));
  if (cols != 0 && rows > INT64_MAX / cols) fail(op, std::string(rows_name) + " * " + cols_name + " overflows int64");
  return rows * cols;
}

static void check_count(const char* op, const char* name, int64_t v) {
  if (v < 0) fail(op, std::string("negative size ") + name + " = " + std::to_string(v));
}

static void check_ptr(const char* op, const char* name, const void* p) {
  if (p == nullptr) fail(op, std::string(name) + " is null");
}

// ---- public ops ---------------------------------------------------------------------------------
void bias_act_forward(float* z, const float* bias, int64_t rows, int64_t cols, bool relu, cudaStream_t stream) {
  const int64_t n = checked_elems("bias_act_forward", "rows", rows, "cols", cols);
  if (n == 0) return;
  check_ptr("bias_act_forward", "z", z);
  check_ptr("bias_act_forward", "bias", bias);
  launch_bias_act_forward(z, bias, n, cols, relu, stream);
}

void relu_backward(float* grad, const float* a, int64_t rows, int64_t cols, cudaStream_t stream) {
  const int64_t n = checked_elems("relu_backward", "rows", rows, "cols", cols);
  if (n == 0) return;
  check_ptr("relu_backward", "grad", grad);
  check_ptr("relu_backward", "a", a);
  launch_relu_backward(grad, a, n, stream);
}

int64_t column_sum_workspace_elems(int64_t rows, int64_t cols) {
  checked_elems("column_sum_workspace_elems", "rows", rows, "cols", cols);
  return column_sum_workspace(rows, cols);
}

void column_sum(const float* g, int64_t rows, int64_t cols, float* db, double* workspace, int64_t workspace_elems,
                cudaStream_t stream) {
  const int64_t n = checked_elems("column_sum", "rows", rows, "cols", cols);
  if (cols == 0) return;
  check_ptr("column_sum", "db", db);
  if (n != 0) check_ptr("column_sum", "g", g);
  const int64_t need = column_sum_workspace(rows, cols);
  if (workspace_elems < need)
    fail("column_sum", "workspace of " + std::to_string(workspace_elems) + " doubles, " + std::to_string(rows) + " x " +
                           std::to_string(cols) + " needs " + std::to_string(need));
  if (need > 0) check_ptr("column_sum", "workspace", workspace);
  launch_column_sum(g, rows, cols, db, workspace, stream);  // rows == 0: db = 0, as the CPU twin
}

void mse_loss_grad(const float* y, const float* t, int64_t rows, int64_t cols, float inv_count, float* grad,
                   double* loss_sum, cudaStream_t stream) {
  const int64_t n = checked_elems("mse_loss_grad", "rows", rows, "cols", cols);
  if (n == 0) return;
  check_ptr("mse_loss_grad", "y", y);
  check_ptr("mse_loss_grad", "t", t);
  check_ptr("mse_loss_grad", "loss_sum", loss_sum);
  launch_mse_loss_grad(y, t, n, inv_count, grad, loss_sum, stream);
}

void softmax_xent_loss_grad(const float* z, const int32_t* labels, int64_t rows, int64_t k, float inv_rows, float* dz,
                            double* loss_sum, unsigned long long* correct, cudaStream_t stream) {
  checked_elems("softmax_xent_loss_grad", "rows", rows, "k", k);
  if (rows == 0) return;
  if (k <= 0 || k > INT_MAX) fail("softmax_xent_loss_grad", "k = " + std::to_string(k) + " is outside [1, INT_MAX]");
  check_ptr("softmax_xent_loss_grad", "z", z);
  check_ptr("softmax_xent_loss_grad", "labels", labels);
  check_ptr("softmax_xent_loss_grad", "loss_sum", loss_sum);
  launch_softmax_xent(z, labels, rows, static_cast<int>(k), inv_rows, dz, loss_sum, correct, stream);
}

void sgd_update(float* p, const float* g, float* v, int64_t n, float lr, float momentum, float weight_decay,
                cudaStream_t stream) {
  check_count("sgd_update", "n", n);
  if (n == 0) return;
  check_ptr("sgd_update", "p", p);
  check_ptr("sgd_update", "g", g);
  if (momentum != 0.0f && v == nullptr) fail("sgd_update", "momentum != 0 needs a momentum buffer v");
  launch_sgd_update(p, g, v, n, lr, momentum, weight_decay, stream);
}

void gather_rows(const float* src, const int64_t* rows, int64_t count, int64_t width, float* dst, cudaStream_t stream) {
  const int64_t n = checked_elems("gather_rows", "count", count, "width", width);
  if (n == 0) return;
  check_ptr("gather_rows", "src", src);
  check_ptr("gather_rows", "rows", rows);
  check_ptr("gather_rows", "dst", dst);
  launch_gather_rows(src, rows, count, width, dst, stream);
}

void gather_labels(const int32_t* src, const int64_t* rows, int64_t count, int32_t* dst, cudaStream_t stream) {
  check_count("gather_labels", "count", count);
  if (count == 0) return;
  check_ptr("gather_labels", "src", src);
  check_ptr("gather_labels", "rows", rows);
  check_ptr("gather_labels", "dst", dst);
  launch_gather_labels(src, rows, count, dst, stream);
}

// ---- loading before a graph capture (step_loss.h preload_graph_kernels) -------------------
// Every kernel of this file, each template instance included: a kernel added above must
// be added here too (the trace tests fail when a capture launches an unloaded kernel).
void preload_elementwise_kernels() {
  cudaFuncAttributes a{};
  TB_CUDA_CHECK(cudaFuncGetAttributes(&a, bias_act_forward_kernel<true>));
  TB_CUDA_CHECK(cudaFuncGetAttributes(&a, bias_act_forward_kernel<false>));
  TB_CUDA_CHECK(cudaFuncGetAttributes(&a, relu_backward_kernel));
  TB_CUDA_CHECK(cudaFuncGetAttributes(&a, column_sum_kernel<float, float>));
  TB_CUDA_CHECK(cudaFuncGetAttributes(&a, column_sum_kernel<float, double>));
  TB_CUDA_CHECK(cudaFuncGetAttributes(&a, column_sum_kernel<double, float>));
  TB_CUDA_CHECK(cudaFuncGetAttributes(&a, mse_loss_grad_kernel));
  TB_CUDA_CHECK(cudaFuncGetAttributes(&a, softmax_xent_kernel));
  TB_CUDA_CHECK(cudaFuncGetAttributes(&a, sgd_update_kernel<true>));
  TB_CUDA_CHECK(cudaFuncGetAttributes(&a, sgd_update_kernel<false>));
  TB_CUDA_CHECK(cudaFuncGetAttributes(&a, gather_rows_kernel));
  TB_CUDA_CHECK(cudaFuncGetAttributes(&a, gather_labels_kernel));
}

}  // namespace tb::cuda
