// kernels/cpu/gemm.h — single-precision GEMM on the CPU (OpenMP, cache-blocked).
// Row-major: C (M x N) = alpha * op(A) * op(B) + beta * C, where op(A) is M x K
// (A stored M x K with lda, or K x M when trans_a) and op(B) is K x N (B stored
// K x N with ldb, or N x K when trans_b). beta == 0 ignores C's old contents
// (NaN-safe). Uses the calling thread's OpenMP team size (omp_set_num_threads).
// The CUDA twin (kernels/cuda/gemm.cu, tb::cuda::gemm) takes the same arguments
// plus a handle and stream.
#pragma once

#include <cstdint>

namespace tb::cpu {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// What this build's gemm is, for env.json: our own kernels (no BLAS), and which
// micro-kernel the compiler flags selected (AVX-512 intrinsics or the portable one).
const char* gemm_implementation();

}  // namespace tb::cpu
