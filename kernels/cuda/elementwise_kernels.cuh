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
// softmax: one warp per row, its lanes striding over the K classes (coalesced);
// 8 rows per block.
static constexpr int kXentThreads = 256;
static constexpr int kXentRowsPerBlock = kXentThreads / 32;
// column_sum: a block of kColThreads threads is a tile of column_tile(N) adjacent
// columns x kColThreads / tile lanes; grid (column tiles, row slices). Lane y of a
// slice sums rows y, y + lanes, ... of the slice; the lanes are added in a fixed tree.
// With one slice the block writes db; with S > 1 it writes double partials (S x N) and
// a second launch of the same kernel sums them over the slices. The slice count depends
// only on B and N, so the result is deterministic.
static constexpr int kColThreads = 256;
static constexpr int64_t kMaxColBlocks = 4096;      // column tiles in the grid (x); loops over the rest
static constexpr int64_t kMaxColSlices = 512;       // row slices (grid y)
static constexpr int64_t kColTargetBlocks = 1024;   // tiles x slices worth having (~8 per SM)
static constexpr int64_t kColMinPerLane = 16;       // rows each lane of a slice sums at least

// Columns per column_sum block: N rounded up to a power of two, at most 32 (a warp
// then reads whole rows when N < 32, 32 adjacent floats of a row otherwise).
static inline int column_tile(int64_t cols) {
  int tile = 1;
  while (tile < cols && tile < 32) tile *= 2;
  return tile;
}
static inline unsigned column_tiles(int64_t cols) { return grid_for(cols, column_tile(cols), kMaxColBlocks); }
// Row slices: enough blocks to fill the GPU (kColTargetBlocks), none whose lanes sum
// fewer than kColMinPerLane rows, at most kMaxColSlices.
static inline int64_t column_slices(int64_t rows, int64_t cols) {
  const int64_t lanes = kColThreads / column_tile(cols);
  const int64_t by_rows = rows / (lanes * kColMinPerLane);
  const int64_t by_blocks = ceil_div(kColTargetBlocks, column_tiles(cols));
  return std::max<int64_t>(1, std::min({by_rows, by_blocks, kMaxColSlices}));
}
// Doubles of workspace column_sum needs (0 when one slice writes db directly).
static inline int64_t column_sum_workspace(int64_t rows, int64_t cols) {
  const int64_t s = cols > 0 ? column_slices(rows, cols) : 1;
  return s > 1 ? s * cols : 0;
}

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
// z (B x N) += bias (N); then relu. n = B * N elements. The column of element i is
// i % N, kept by a carry instead of a 64-bit division per element: the grid stride
// advances it by stride % N.
template <bool kRelu>
static __global__ void __launch_bounds__(kThreads)
    bias_act_forward_kernel(float* z, const float* bias, int64_t n, int64_t cols) {
  int64_t i = thread_index();
  if (i >= n) return;
  const int64_t stride = thread_count(), step = stride % cols;
  int64_t c = i % cols;
  for (; i < n; i += stride) {
    const float b = bias[c];
    if constexpr (kRelu) {
      z[i] = tb::relu(z[i] + b);
    } else {
      z[i] += b;
    }
    c += step;
    if (c >= cols) c -= cols;
  }
}

// grad (n) = relu'(a) * grad.
static __global__ void __launch_bounds__(kThreads) relu_backward_kernel(float* grad, const float* a, int64_t n) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) grad[i] = tb::relu_backward(grad[i], a[i]);
}

// Column sums of g (rows x N) over row slice blockIdx.y (rows [y R, y R + R), R =
// slice_rows) into out[blockIdx.y] (N): pass 1 reads the float gradient, pass 2 the
// double partials. Block (tile, lanes) = (column_tile(N), kColThreads / tile): thread
// (x, y) adds rows y, y + lanes, ... of column c0 + x in double; then a fixed tree over
// y, rounded once to Out. The order depends only on the sizes: deterministic. No rows
// writes zeros.
template <class In, class Out>
static __global__ void __launch_bounds__(kColThreads)
    column_sum_kernel(const In* g, int64_t rows, int64_t cols, int64_t slice_rows, Out* out) {
  __shared__ double part[kColThreads];
  const int tile = static_cast<int>(blockDim.x), lanes = static_cast<int>(blockDim.y);
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y), me = ty * tile + tx;
  const int64_t r_begin = int64_t(blockIdx.y) * slice_rows;
  const int64_t r_end = r_begin + slice_rows < rows ? r_begin + slice_rows : rows;
  Out* out_row = out + int64_t(blockIdx.y) * cols;
  // c0 depends on blockIdx only: every thread of the block runs the same iterations,
  // so the barriers below are reached uniformly.
  for (int64_t c0 = int64_t(blockIdx.x) * tile; c0 < cols; c0 += int64_t(gridDim.x) * tile) {
    const int64_t c = c0 + tx;
    double acc = 0.0;
    if (c < cols) {
      const In* p = g + (r_begin + ty) * cols + c;
      const int64_t step = int64_t(lanes) * cols;
      for (int64_t r = r_begin + ty; r < r_end; r += lanes, p += step) acc += static_cast<double>(*p);
    }
    part[me] = acc;
    __syncthreads();
    for (int half = lanes / 2; half > 0; half /= 2) {  // lanes is a power of two
      if (ty < half) part[me] += part[me + half * tile];
      __syncthreads();
    }
    if (ty == 0 && c < cols) out_row[c] = static_cast<Out>(part[tx]);
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

// Sum (max) over the 32 lanes of a warp, in every lane (fixed butterfly).
template <class T>
static __device__ __forceinline__ T warp_allsum(T v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// One warp per row r of z (B x K), 8 rows per block, grid-stride over the rows: the
// lanes stride over the K logits (coalesced), find the max and its first index and the
// sum of exp(z - max) with butterfly shuffles, then write dz's row (unless dz ==
// nullptr) with tb::softmax_xent_grad; lane 0 keeps the row's tb::softmax_xent_loss and
// argmax hit. A label outside [0, K) cannot be thrown from here: that row contributes
// NaN to the loss (and to dz), never reads outside z. Per block: one atomicAdd each.
static __global__ void __launch_bounds__(kXentThreads)
    softmax_xent_kernel(const float* z, const int32_t* labels, int64_t rows, int k, float inv_rows, float* dz,
                        double* loss_sum, unsigned long long* correct) {
  const float nan = __int_as_float(0x7fc00000), neg_inf = __int_as_float(static_cast<int>(0xff800000u));
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  double loss = 0.0;
  unsigned long long hits = 0;
  // r is the same for every lane of a warp: the shuffles below see whole warps.
  for (int64_t r = int64_t(blockIdx.x) * kXentRowsPerBlock + warp; r < rows;
       r += int64_t(gridDim.x) * kXentRowsPerBlock) {
    const int label = labels[r];
    const float* zr = z + r * k;
    float* dz_row = dz != nullptr ? dz + r * k : nullptr;
    if (label < 0 || label >= k) {
      if (lane == 0) loss += static_cast<double>(nan);
      if (dz_row != nullptr)
        for (int j = lane; j < k; j += 32) dz_row[j] = nan;
      continue;
    }
    // The max and its first index (tb::softmax_xent_row keeps the first of equal maxima).
    float zmax = neg_inf;
    int best = k;
    for (int j = lane; j < k; j += 32) {
      const float v = zr[j];
      if (best == k || v > zmax) {  // j rises: a lane keeps its first maximum
        zmax = v;
        best = j;
      }
    }
    for (int off = 16; off > 0; off >>= 1) {
      const float m = __shfl_xor_sync(0xffffffffu, zmax, off);
      const int b = __shfl_xor_sync(0xffffffffu, best, off);
      if (m > zmax || (m == zmax && b < best)) {
        zmax = m;
        best = b;
      }
    }
    float sum = 0.0f;
    for (int j = lane; j < k; j += 32) sum += std::exp(zr[j] - zmax);
    const float log_sum = std::log(warp_allsum(sum));
    if (dz_row != nullptr)
      for (int j = lane; j < k; j += 32) dz_row[j] = tb::softmax_xent_grad(zr[j], zmax, log_sum, j == label, inv_rows);
    if (lane == 0) {
      loss += static_cast<double>(tb::softmax_xent_loss(zr[label], zmax, log_sum));
      hits += best == label ? 1u : 0u;
    }
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

// dst (count x width) = src rows `rows[i]`; element e = (i, j), i = e / width, kept
// by a carry (the grid stride advances it by stride / width rows and stride % width
// columns) instead of a 64-bit division per element.
static __global__ void __launch_bounds__(kThreads)
    gather_rows_kernel(const float* src, const int64_t* rows, int64_t count, int64_t width, float* dst) {
  const int64_t n = count * width;
  int64_t e = thread_index();
  if (e >= n) return;
  const int64_t stride = thread_count(), di = stride / width, dj = stride - di * width;
  int64_t i = e / width, j = e - i * width;
  for (; e < n; e += stride) {
    dst[e] = src[rows[i] * width + j];
    i += di;
    j += dj;
    if (j >= width) {
      j -= width;
      ++i;
    }
  }
}

static __global__ void __launch_bounds__(kThreads)
    gather_labels_kernel(const int32_t* src, const int64_t* rows, int64_t count, int32_t* dst) {
  for (int64_t i = thread_index(); i < count; i += thread_count()) dst[i] = src[rows[i]];
}

}  // namespace tb::cuda
