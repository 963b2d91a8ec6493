// kernels/cuda/linear_step_kernels.cuh — the device code of kernels/cuda/linear_step.cu:
// a linear layer's forward pass, MSE loss and gradients in one pass over X (the CUDA
// twin of kernels/cpu/linear_step.cpp). A header so that tests/cuda_emu/ runs these
// exact kernels on the CPU (see elementwise_kernels.cuh). B rows, D inputs, O outputs;
// X (B x D), T (B x O) row-major, W (O x D), b (O).
//
// Pass 1 (linear_mse_partial_kernel): block k owns rows [k R, k R + R) (R = rows per
// block, linear_step_rows_per_block), in tiles of 8 rows, one warp per row:
//   forward   the warp's lanes stride over the row's D inputs (coalesced), each lane
//             keeping O partial dot products, summed by a shuffle tree; lane 0 adds b,
//             takes tb::mse_element and leaves g (O) in shared memory;
//   backward  thread t owns columns t, t + 256, ... of the block's dW partial (O x D in
//             shared memory) and adds g_r x_r over the tile's rows — rows the forward
//             has just loaded, so X comes from HBM once (the re-read hits L1/L2).
// Block k writes its partial row [dW (O x D) | db (O) | loss] in double to a workspace
// (blocks x (O D + O + 1)). Pass 2 (linear_mse_finish_kernel) sums that matrix's
// columns over the blocks — lanes over blocks, then a fixed tree — and rounds once.
// No atomics: the result depends only on B, D and O.
#pragma once

#include <cstdint>

#include "kernels/cuda/launch.cuh"
#include "kernels/scalar_math.h"

namespace tb::cuda {

static constexpr int kStepThreads = 256;               // 8 warps: one row each per tile
static constexpr int kStepWarps = kStepThreads / 32;   // rows per tile
static constexpr int kStepMaxOutputs = 16;             // O: per-lane accumulators z[16], acc[16]
// O x D: the block's dW partial lives in static shared memory, at most 32 KiB. Two
// instantiations: up to 1024 weights (4 KiB, so more blocks fit on an SM) and up to 8192.
static constexpr int kStepSmallWeights = 1024;
static constexpr int kStepMaxWeights = 8192;
// D: a tile of 8 rows (64 KiB at 2048) must stay in L1 between forward and backward.
static constexpr int kStepMaxInputs = 2048;
static constexpr int64_t kStepMaxBlocks = 512;         // pass 1 grid cap (~4 blocks per SM on 132 SMs)
static constexpr int kStepFinishThreads = 256;
static constexpr int64_t kStepFinishMaxBlocks = 4096;

// Whether the fused step handles D inputs and O outputs (else the two-GEMM path).
static inline bool linear_step_fits(int64_t d, int64_t o) {
  return o >= 1 && o <= kStepMaxOutputs && d >= 1 && d <= kStepMaxInputs && o * d <= kStepMaxWeights;
}

// Rows per pass-1 block: at least 16 max(O, 4) rows, so that a block's partial row
// (8 (O D + O + 1) bytes, written then read by pass 2) costs at most about a quarter of
// the X bytes it reads (4 R D); more when B would need over kStepMaxBlocks blocks; a
// whole number of 8-row tiles.
static inline int64_t linear_step_rows_per_block(int64_t rows, int64_t o) {
  const int64_t floor_rows = 2 * kStepWarps * (o > 4 ? o : 4);
  const int64_t r = std::max(floor_rows, ceil_div(rows, kStepMaxBlocks));  // host code
  return ceil_div(r, kStepWarps) * kStepWarps;
}
static inline int64_t linear_step_blocks(int64_t rows, int64_t o) {
  return ceil_div(rows, linear_step_rows_per_block(rows, o));
}

// Pass 1's partials: `blocks` rows of O D + O + 1 doubles.
static inline int64_t linear_step_partial_width(int64_t d, int64_t o) { return o * d + o + 1; }
static inline int64_t linear_step_workspace_bytes(int64_t blocks, int64_t d, int64_t o) {
  return blocks * linear_step_partial_width(d, o) * int64_t{sizeof(double)};
}

// Pass 2's block: tile x lanes threads, tile = the partial width rounded up to a power
// of two, at most 32 (as column_sum's).
static inline int linear_step_finish_tile(int64_t width) {
  int tile = 1;
  while (tile < width && tile < 32) tile *= 2;
  return tile;
}

// Sum over the 32 lanes of a warp, valid in lane 0 (fixed shuffle tree).
static __device__ __forceinline__ float warp_sum_to_lane0(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

// Pass 1, grid = linear_step_blocks(rows, o) blocks of kStepThreads; needs
// linear_step_fits(d, o) and O D <= kWeights. Block k writes row k of part (blocks x
// (O D + O + 1) doubles): its dW partial, db partial and loss.
template <int kWeights>
static __global__ void __launch_bounds__(kStepThreads)
    linear_mse_partial_kernel(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                              const float* b, float inv_count, int64_t rows_per_block, double* part) {
  __shared__ float dws[kWeights];                      // this block's dW partial, O x D
  __shared__ float gs[kStepWarps][kStepMaxOutputs];    // g of the tile's rows
  __shared__ double warp_db[kStepWarps][kStepMaxOutputs];
  __shared__ double warp_loss[kStepWarps];
  // D <= 2048 and O <= 16 (linear_step_fits): 32-bit column and weight indices.
  const int D = static_cast<int>(d), O = static_cast<int>(o), OD = O * D;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  for (int i = tid; i < OD; i += kStepThreads) dws[i] = 0.0f;
  if (lane == 0) {
    warp_loss[warp] = 0.0;
    for (int j = 0; j < kStepMaxOutputs; ++j) warp_db[warp][j] = 0.0;
  }
  const int64_t r0 = int64_t(blockIdx.x) * rows_per_block;
  const int64_t r1 = r0 + rows_per_block < rows ? r0 + rows_per_block : rows;
  __syncthreads();
  for (int64_t tile = r0; tile < r1; tile += kStepWarps) {
    const int64_t r = tile + warp;
    if (r < r1) {  // the same for all lanes of a warp: the shuffles see whole warps
      const float* xr = x + r * D;
      float z[kStepMaxOutputs];
#pragma unroll
      for (int j = 0; j < kStepMaxOutputs; ++j) z[j] = 0.0f;
      for (int p = lane; p < D; p += 32) {
        const float xv = xr[p];
#pragma unroll
        for (int j = 0; j < kStepMaxOutputs; ++j)
          if (j < O) z[j] += xv * w[j * D + p];
      }
#pragma unroll
      for (int j = 0; j < kStepMaxOutputs; ++j)
        if (j < O) z[j] = warp_sum_to_lane0(z[j]);
      if (lane == 0) {
        double loss = 0.0;
        for (int j = 0; j < O; ++j) {
          float g;
          loss += static_cast<double>(tb::mse_element(z[j] + b[j], t[r * O + j], inv_count, &g));
          gs[warp][j] = g;
          warp_db[warp][j] += static_cast<double>(g);
        }
        warp_loss[warp] += loss;
      }
    }
    __syncthreads();  // gs complete
    const int nr = r1 - tile < kStepWarps ? static_cast<int>(r1 - tile) : kStepWarps;
    const float* xt = x + tile * D;
    for (int p = tid; p < D; p += kStepThreads) {
      float acc[kStepMaxOutputs];
#pragma unroll
      for (int j = 0; j < kStepMaxOutputs; ++j) acc[j] = j < O ? dws[j * D + p] : 0.0f;
      for (int i = 0; i < nr; ++i) {
        const float xv = xt[i * D + p];
#pragma unroll
        for (int j = 0; j < kStepMaxOutputs; ++j)
          if (j < O) acc[j] += gs[i][j] * xv;
      }
#pragma unroll
      for (int j = 0; j < kStepMaxOutputs; ++j)
        if (j < O) dws[j * D + p] = acc[j];
    }
    __syncthreads();  // gs is rewritten by the next tile
  }
  double* out = part + int64_t(blockIdx.x) * (OD + O + 1);
  for (int i = tid; i < OD; i += kStepThreads) out[i] = static_cast<double>(dws[i]);
  if (tid < O) {  // warps in order
    double s = 0.0;
    for (int k = 0; k < kStepWarps; ++k) s += warp_db[k][tid];
    out[OD + tid] = s;
  }
  if (tid == 0) {
    double s = 0.0;
    for (int k = 0; k < kStepWarps; ++k) s += warp_loss[k];
    out[OD + O] = s;
  }
}

// Pass 2: column sums of part (blocks x (O D + O + 1) doubles) over the blocks; column
// c < O D is dw[c], then db (O), then the loss, ADDED to *loss_sum (one thread: one add).
// Block (tile, lanes) = (linear_step_finish_tile(width), kStepFinishThreads / tile),
// grid-stride over column tiles: thread (x, y) adds blocks y, y + lanes, ... of column
// c0 + x, then a fixed tree over y; rounded once. blocks == 0 (no rows) writes zeros.
static __global__ void __launch_bounds__(kStepFinishThreads)
    linear_mse_finish_kernel(const double* part, int64_t blocks, int64_t d, int64_t o, float* dw, float* db,
                             double* loss_sum) {
  __shared__ double acc_s[kStepFinishThreads];
  const int tile = static_cast<int>(blockDim.x), lanes = static_cast<int>(blockDim.y);
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y), me = ty * tile + tx;
  const int64_t od = o * d, width = od + o + 1;
  // c0 depends on blockIdx only: the barriers below are reached by the whole block.
  for (int64_t c0 = int64_t(blockIdx.x) * tile; c0 < width; c0 += int64_t(gridDim.x) * tile) {
    const int64_t c = c0 + tx;
    double acc = 0.0;
    if (c < width)
      for (int64_t k = ty; k < blocks; k += lanes) acc += part[k * width + c];
    acc_s[me] = acc;
    __syncthreads();
    for (int half = lanes / 2; half > 0; half /= 2) {  // lanes is a power of two
      if (ty < half) acc_s[me] += acc_s[me + half * tile];
      __syncthreads();
    }
    if (ty == 0 && c < width) {
      const double s = acc_s[tx];
      if (c < od) {
        dw[c] = static_cast<float>(s);
      } else if (c < od + o) {
        db[c - od] = static_cast<float>(s);
      } else {
        *loss_sum += s;
      }
    }
    __syncthreads();  // acc_s is rewritten by the next iteration
  }
}

}  // namespace tb::cuda
