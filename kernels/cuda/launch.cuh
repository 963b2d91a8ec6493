// kernels/cuda/launch.cuh — launch geometry and thread indices shared by the kernel
// headers (*_kernels.cuh). Device-side names are the CUDA built-ins, which nvcc
// provides in a .cu and tests/cuda_emu/cuda_emu.h provides in host C++; so this header
// includes nothing from CUDA.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tb::cuda {

static inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks for `items` work items (>= 1) at `per_block` items per block, at most `cap`
// (kernels stride over the rest with grid-stride loops).
static inline unsigned grid_for(int64_t items, int64_t per_block, int64_t cap) {
  return static_cast<unsigned>(std::min(ceil_div(items, per_block), cap));
}

// This thread's index in a 1-D grid, and the grid's thread count (the loop stride), in 64 bits.
static __device__ __forceinline__ int64_t thread_index() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
static __device__ __forceinline__ int64_t thread_count() { return int64_t(gridDim.x) * blockDim.x; }

}  // namespace tb::cuda
