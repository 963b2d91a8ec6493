// kernels/cuda/elementwise.cu — CUDA twins of kernels/cpu/elementwise.cpp (same
// names, argument order, stream last). B rows, N columns, K classes. Per-element
// math is tb:: in kernels/scalar_math.h, the templates the CPU twins call; results
// may differ from the host's in the last bit where one compiler contracts a * b + c
// into an FMA and the other does not, and in expf/logf (device vs glibc).
// Three layers per op: static __global__ *_kernel -> static launch_* (grid via
// ceil_div, capped; grid-stride loops; 64-bit indices) -> public op (validates).
// No allocation, no host synchronisation: every op is stream-ordered and capturable.
#include "kernels/cuda/elementwise.h"

#include <algorithm>
#include <climits>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/error.h"
#include "kernels/scalar_math.h"

namespace tb::cuda {

// ---- launch geometry -------------------------------------------------------------------
static constexpr int kThreads = 256;               // elementwise and loss blocks
static constexpr int64_t kMaxBlocks = 8192;        // grid cap (<< 2^31 - 1): loops stride over the rest
static constexpr int64_t kMaxReduceBlocks = 1024;  // loss kernels: one atomicAdd per block
// softmax: one thread per row (the row loops are tb::softmax_xent_row's); small
// blocks spread a batch of a few thousand rows over more SMs.
static constexpr int kXentThreads = 64;
// column_sum: a block owns kColTile adjacent columns; kColLanes threads per column
// each sum every kColLanes-th row, then one thread adds the lanes in lane order.
static constexpr int kColTile = 32;
static constexpr int kColLanes = 16;
static constexpr int64_t kMaxColBlocks = 4096;

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks for `items` work items (>= 1) at `per_block` items per block, at most `cap`.
static unsigned grid_for(int64_t items, int64_t per_block, int64_t cap) {
  return static_cast<unsigned>(std::min(ceil_div(items, per_block), cap));
}

static __device__ __forceinline__ int64_t thread_index() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
static __device__ __forceinline__ int64_t thread_count() { return int64_t(gridDim.x) * blockDim.x; }

// Sum of v over the block (blockDim.x == kBlock, a multiple of 32); valid in thread 0.
// Fixed shuffle tree, then the warp partials in warp order. Every thread of the block
// must call it; the closing barrier lets a kernel call it again.
template <int kBlock, class T>
static __device__ T block_sum(T v) {
  static_assert(kBlock % 32 == 0 && kBlock <= 1024, "block of whole warps");
  __shared__ T warp_part[kBlock / 32];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_part[warp] = v;
  __syncthreads();
  T total = T(0);
  if (threadIdx.x == 0)
    for (int w = 0; w < kBlock / 32; ++w) total += warp_part[w];
  __syncthreads();
  return total;
}

// ---- kernels ---------------------------------------------------------------------------
// z (B x N) += bias (N); then relu. n = B * N elements, column = index % N.
template <bool kRelu>
static __global__ void __launch_bounds__(kThreads)
    bias_act_forward_kernel(float* z, const float* bias, int64_t n, int64_t cols) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const float b = bias[i % cols];
    if constexpr (kRelu) {
      z[i] = tb::relu(z[i] + b);
    } else {
      z[i] += b;
    }
  }
}

// grad (n) = relu'(a) * grad.
static __global__ void __launch_bounds__(kThreads) relu_backward_kernel(float* grad, const float* a, int64_t n) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) grad[i] = tb::relu_backward(grad[i], a[i]);
}

// db (N) = column sums of g (B x N) in double, rounded once to float. Block (kColTile,
// kColLanes): thread (x, y) sums rows y, y + kColLanes, ... of column c0 + x (a warp
// reads kColTile adjacent floats of one row); thread (x, 0) then adds the lanes in
// order 0..kColLanes-1. The order depends only on B, so the result is deterministic.
// rows == 0 writes zeros.
static __global__ void __launch_bounds__(kColTile* kColLanes)
    column_sum_kernel(const float* g, int64_t rows, int64_t cols, float* db) {
  __shared__ double part[kColLanes][kColTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  // c0 depends on blockIdx only: every thread of the block runs the same iterations,
  // so the barriers below are reached uniformly.
  for (int64_t c0 = int64_t(blockIdx.x) * kColTile; c0 < cols; c0 += int64_t(gridDim.x) * kColTile) {
    const int64_t c = c0 + tx;
    double acc = 0.0;
    if (c < cols)
      for (int64_t r = ty; r < rows; r += kColLanes) acc += static_cast<double>(g[r * cols + c]);
    part[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && c < cols) {
      double sum = 0.0;
      for (int y = 0; y < kColLanes; ++y) sum += part[y][tx];
      db[c] = static_cast<float>(sum);
    }
    __syncthreads();  // part is rewritten by the next iteration
  }
}

// grad (n) = tb::mse_element's gradient (skipped when grad == nullptr);
// *loss_sum += sum of (y - t)^2, per-block partials in double, one atomicAdd per block.
static __global__ void __launch_bounds__(kThreads)
    mse_loss_grad_kernel(const float* y, const float* t, int64_t n, float inv_count, float* grad, double* loss_sum) {
  double sum = 0.0;
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    float g;
    sum += static_cast<double>(tb::mse_element(y[i], t[i], inv_count, &g));
    if (grad != nullptr) grad[i] = g;
  }
  sum = block_sum<kThreads>(sum);
  if (threadIdx.x == 0) atomicAdd(loss_sum, sum);
}

// One thread per row r of z (B x K): tb::softmax_xent_row writes dz's row (unless
// dz == nullptr) and returns -log p[label]. A label outside [0, K) cannot be thrown
// from here: that row contributes NaN to the loss (and to dz), never reads outside z.
static __global__ void __launch_bounds__(kXentThreads)
    softmax_xent_kernel(const float* z, const int32_t* labels, int64_t rows, int k, float inv_rows, float* dz,
                        double* loss_sum, unsigned long long* correct) {
  const float nan = __int_as_float(0x7fc00000);
  double loss = 0.0;
  unsigned long long hits = 0;
  for (int64_t r = thread_index(); r < rows; r += thread_count()) {
    const int label = labels[r];
    float* dz_row = dz != nullptr ? dz + r * k : nullptr;
    if (label < 0 || label >= k) {
      loss += static_cast<double>(nan);
      if (dz_row != nullptr)
        for (int j = 0; j < k; ++j) dz_row[j] = nan;
      continue;
    }
    int argmax = 0;
    const float row_loss = tb::softmax_xent_row(z + r * k, k, label, inv_rows, dz_row, &argmax);
    loss += static_cast<double>(row_loss);
    hits += argmax == label ? 1u : 0u;
  }
  loss = block_sum<kXentThreads>(loss);
  hits = block_sum<kXentThreads>(hits);
  if (threadIdx.x == 0) {
    atomicAdd(loss_sum, loss);
    if (correct != nullptr && hits != 0) atomicAdd(correct, hits);
  }
}

// tb::sgd_element per parameter; without momentum v is not touched (may be null).
template <bool kMomentum>
static __global__ void __launch_bounds__(kThreads)
    sgd_update_kernel(float* p, const float* g, float* v, int64_t n, float lr, float momentum, float weight_decay) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    if constexpr (kMomentum) {
      tb::sgd_element(&p[i], g[i], &v[i], lr, momentum, weight_decay);
    } else {
      float unused = 0.0f;
      tb::sgd_element(&p[i], g[i], &unused, lr, 0.0f, weight_decay);
    }
  }
}

// dst (count x width) = src rows `rows[i]`; element e = (i, j) with i = e / width.
static __global__ void __launch_bounds__(kThreads)
    gather_rows_kernel(const float* src, const int64_t* rows, int64_t count, int64_t width, float* dst) {
  const int64_t n = count * width;
  for (int64_t e = thread_index(); e < n; e += thread_count()) {
    const int64_t i = e / width, j = e - i * width;
    dst[e] = src[rows[i] * width + j];
  }
}

static __global__ void __launch_bounds__(kThreads)
    gather_labels_kernel(const int32_t* src, const int64_t* rows, int64_t count, int32_t* dst) {
  for (int64_t i = thread_index(); i < count; i += thread_count()) dst[i] = src[rows[i]];
}

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

static void launch_column_sum(const float* g, int64_t rows, int64_t cols, float* db, cudaStream_t stream) {
  const dim3 block(kColTile, kColLanes);
  column_sum_kernel<<<grid_for(cols, kColTile, kMaxColBlocks), block, 0, stream>>>(g, rows, cols, db);
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
  softmax_xent_kernel<<<grid_for(rows, kXentThreads, kMaxBlocks), kXentThreads, 0, stream>>>(
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

void column_sum(const float* g, int64_t rows, int64_t cols, float* db, cudaStream_t stream) {
  const int64_t n = checked_elems("column_sum", "rows", rows, "cols", cols);
  if (cols == 0) return;
  check_ptr("column_sum", "db", db);
  if (n != 0) check_ptr("column_sum", "g", g);
  launch_column_sum(g, rows, cols, db, stream);  // rows == 0: db = 0, as the CPU twin
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

}  // namespace tb::cuda
