// kernels/cuda/gemm_kernels.cuh — the device code of kernels/cuda/gemm.cu besides
// cuBLAS: C = beta * C, the k == 0 / alpha == 0 path (a header so tests/cuda_emu/ can
// run it on the CPU; see elementwise_kernels.cuh).
#pragma once

#include <cstdint>

#include "kernels/cuda/launch.cuh"

namespace tb::cuda {

static constexpr int kScaleThreads = 256;
static constexpr int64_t kScaleMaxBlocks = 4096;  // grid cap; the loop strides over the rest

// Grid-stride over the M*N valid elements of C (M x N, row stride ldc); padding
// untouched; beta == 0 writes zeros (NaN-safe, as BLAS). Element e = (i, j), i = e / N,
// kept by a carry (the stride advances it by stride / N rows and stride % N columns)
// instead of a 64-bit division per element.
static __global__ void __launch_bounds__(kScaleThreads)
    scale_c_kernel(float* c, int64_t m, int64_t n, int64_t ldc, float beta) {
  const int64_t total = m * n;
  int64_t e = thread_index();
  if (e >= total) return;
  const int64_t stride = thread_count(), di = stride / n, dj = stride - di * n;
  int64_t i = e / n, j = e - i * n;
  for (; e < total; e += stride) {
    float* cij = c + i * ldc + j;
    *cij = beta == 0.0f ? 0.0f : beta * *cij;
    i += di;
    j += dj;
    if (j >= n) {
      j -= n;
      ++i;
    }
  }
}

}  // namespace tb::cuda
