// kernels/cuda/axpy.cu — dst += src (n floats): the CUDA twin of kernels/cpu/axpy.cpp.
// Three layers: static __global__ add_inplace_kernel (axpy_kernels.cuh; grid-stride)
// -> static launch_add_inplace (grid via ceil_div, capped) -> public add_inplace
// (validates). One float addition per element: bitwise equal to the CPU twin.
#include "kernels/cuda/axpy.h"

#include <string>

#include "kernels/cuda/axpy_kernels.cuh"
#include "kernels/cuda/check.h"
#include "kernels/error.h"

namespace tb::cuda {

// n >= 1, pointers checked.
static void launch_add_inplace(float* dst, const float* src, int64_t n, cudaStream_t stream) {
  add_inplace_kernel<<<grid_for(n, kAxpyThreads, kAxpyMaxBlocks), kAxpyThreads, 0, stream>>>(dst, src, n);
  TB_CUDA_CHECK_LAUNCH();
}

void add_inplace(float* dst, const float* src, int64_t n, cudaStream_t stream) {
  if (n < 0) throw Error("tb::cuda::add_inplace: negative size n = " + std::to_string(n));
  if (n == 0) return;
  if (dst == nullptr || src == nullptr) throw Error("tb::cuda::add_inplace: null pointer");
  launch_add_inplace(dst, src, n, stream);
}

}  // namespace tb::cuda
