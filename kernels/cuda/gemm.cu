// kernels/cuda/gemm.cu — row-major float32 GEMM on the GPU through cuBLAS (the
// CUDA twin of kernels/cpu/gemm.cpp). M rows of C, N columns of C, K the reduction
// length: C (M x N) = alpha * op(A) (M x K) * op(B) (K x N) + beta * C, row-major.
// The row-major -> column-major swap is kernels/gemm_layout.h (tested on the CPU).
// k == 0 or alpha == 0 never reaches cuBLAS: C = beta * C by our own kernel, with
// beta == 0 writing zeros (NaN-safe) and A, B unread, exactly as tb::cpu::gemm.
#include "kernels/cuda/gemm.h"

#include <algorithm>
#include <climits>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm_kernels.cuh"
#include "kernels/error.h"
#include "kernels/gemm_layout.h"

namespace tb::cuda {

static void launch_scale_c(float* c, int64_t m, int64_t n, int64_t ldc, float beta, cudaStream_t stream) {
  scale_c_kernel<<<grid_for(m * n, kScaleThreads, kScaleMaxBlocks), kScaleThreads, 0, stream>>>(c, m, n, ldc, beta);
  TB_CUDA_CHECK_LAUNCH();
}

// ---- validation ----------------------------------------------------------------------
[[noreturn]] static void fail(const std::string& what) { throw tb::Error("tb::cuda::gemm: " + what); }

static void check_int32(const char* name, int64_t v) {
  if (v > INT_MAX) fail(std::string(name) + " = " + std::to_string(v) + " does not fit cuBLAS's int");
}

static void check_ld(const char* name, int64_t ld, int64_t row_len) {
  if (ld < std::max<int64_t>(row_len, 1))
    fail(std::string(name) + " = " + std::to_string(ld) + " is smaller than the row length " + std::to_string(row_len));
  check_int32(name, ld);
}

// ---- public ops ------------------------------------------------------------------------
void gemm(cublasHandle_t handle, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
          cudaStream_t stream) {
  if (m < 0 || n < 0 || k < 0)
    fail("negative dimension m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
  check_int32("m", m);
  check_int32("n", n);
  check_int32("k", k);
  if (m == 0 || n == 0) return;
  check_ld("ldc", ldc, n);
  if (c == nullptr) fail("c is null");
  if (k == 0 || alpha == 0.0f) {  // BLAS semantics: A and B are not read
    if (beta != 1.0f) launch_scale_c(c, m, n, ldc, beta, stream);
    return;
  }
  check_ld("lda", lda, trans_a ? m : k);
  check_ld("ldb", ldb, trans_b ? k : n);
  if (a == nullptr || b == nullptr) fail("a or b is null");
  if (handle == nullptr) fail("cuBLAS handle is null");

  const ColMajorGemm g = map_row_major_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
  // The handle runs on `stream`. cublasSetStream also resets the handle's workspace to
  // cuBLAS's default pool, which would drop a workspace set with cublasSetWorkspace
  // (CUDA-graph capture needs one), so it is called only when the stream changes.
  cudaStream_t current = nullptr;
  TB_CUBLAS_CHECK(cublasGetStream(handle, &current));
  if (current != stream) TB_CUBLAS_CHECK(cublasSetStream(handle, stream));
  // alpha and beta live on the host.
  TB_CUBLAS_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
  TB_CUBLAS_CHECK(cublasSgemm(handle, g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N,
                              g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(g.m), static_cast<int>(g.n),
                              static_cast<int>(g.k), &alpha, g.first, static_cast<int>(g.ld_first), g.second,
                              static_cast<int>(g.ld_second), &beta, g.c, static_cast<int>(g.ldc)));
}

void set_tf32(cublasHandle_t handle, bool allow_tf32) {
  if (handle == nullptr) throw tb::Error("tb::cuda::set_tf32: cuBLAS handle is null");
  TB_CUBLAS_CHECK(cublasSetMathMode(handle, allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

}  // namespace tb::cuda
