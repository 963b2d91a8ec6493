// kernels/cuda/gemm.h — row-major single-precision GEMM on the GPU through cuBLAS.
// Same arguments as tb::cpu::gemm (kernels/cpu/gemm.h) plus the cuBLAS handle
// first and the stream last; the row-major -> column-major mapping is
// kernels/gemm_layout.h. TF32 tensor-core math is used only when allow_tf32.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace tb::cuda {

void gemm(cublasHandle_t handle, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
          cudaStream_t stream);

// Sets the handle's math mode: CUBLAS_DEFAULT_MATH (strict fp32) or TF32 tensor ops.
void set_tf32(cublasHandle_t handle, bool allow_tf32);

}  // namespace tb::cuda
