// kernels/cuda/elementwise_kernels.cuh — the device code of kernels/cuda/elementwise.cu:
// launch geometry and the __global__ kernels (the launchers and shape checks stay in
// the .cu). A header of its own so that tests/cuda_emu/ can compile these exact kernels
// as host C++ under an emulation of CUDA's thread model (cuda_emu.h: real threads per
// block, __syncthreads as a barrier, warp shuffles through a per-warp exchange) and test
// their indexing and block reductions without a GPU. So it includes nothing from CUDA
// (nvcc provides the built-ins in a .cu) and every name in it is static or inline.
// B rows, N columns, K classes; per-element math is tb:: in kernels/scalar_math.h.
#pragma once

#include <cstdint>

#include "kernels/cuda/launch.cuh"
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

}  // namespace tb::cuda
