// kernels/cuda/axpy.cu — dst += src (n floats): the CUDA twin of kernels/cpu/axpy.cpp.
// Three layers: static __global__ add_inplace_kernel (grid-stride, 64-bit indices)
// -> static launch_add_inplace (grid via ceil_div, capped) -> public add_inplace
// (validates). One float addition per element: bitwise equal to the CPU twin.
#include "kernels/cuda/axpy.h"

#include <algorithm>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/error.h"

namespace tb::cuda {

static constexpr int kThreads = 256;
static constexpr int64_t kMaxBlocks = 8192;  // grid cap: the loop strides over the rest

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// dst (n) += src (n).
static __global__ void __launch_bounds__(kThreads) add_inplace_kernel(float* dst, const float* src, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] += src[i];
}

// n >= 1, pointers checked.
static void launch_add_inplace(float* dst, const float* src, int64_t n, cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>(std::min(ceil_div(n, kThreads), kMaxBlocks));
  add_inplace_kernel<<<grid, kThreads, 0, stream>>>(dst, src, n);
  TB_CUDA_CHECK_LAUNCH();
}

void add_inplace(float* dst, const float* src, int64_t n, cudaStream_t stream) {
  if (n < 0) throw Error("tb::cuda::add_inplace: negative size n = " + std::to_string(n));
  if (n == 0) return;
  if (dst == nullptr || src == nullptr) throw Error("tb::cuda::add_inplace: null pointer");
  launch_add_inplace(dst, src, n, stream);
}

}  // namespace tb::cuda
