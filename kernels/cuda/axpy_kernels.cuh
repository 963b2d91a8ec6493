// kernels/cuda/axpy_kernels.cuh — the device code of kernels/cuda/axpy.cu (a header
// so tests/cuda_emu/ can run it on the CPU; see elementwise_kernels.cuh).
#pragma once

#include <cstdint>

#include "kernels/cuda/launch.cuh"

namespace tb::cuda {

static constexpr int kAxpyThreads = 256;
static constexpr int64_t kAxpyMaxBlocks = 8192;  // grid cap: the loop strides over the rest

// dst (n) += src (n).
static __global__ void __launch_bounds__(kAxpyThreads) add_inplace_kernel(float* dst, const float* src, int64_t n) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) dst[i] += src[i];
}

}  // namespace tb::cuda
