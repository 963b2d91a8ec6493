// kernels/gemm_layout.h — the one place where our row-major GEMM becomes a
// column-major (cuBLAS) call. Pure host logic, so the CPU tests check it.
//
// Row-major C (M x N) = op(A) (M x K) * op(B) (K x N). A row-major matrix with
// leading dimension ld is the column-major transpose with the same ld, so
//   C^T (N x M, col-major) = op(B)^T (N x K) * op(A)^T (K x M),
// i.e. cublasSgemm(opB, opA, N, M, K, alpha, B, ldb, A, lda, beta, C, ldc):
// the operands swap places, the transpose flags stay with their matrices, and
// M and N swap.
#pragma once

#include <cstdint>

namespace tb {

struct ColMajorGemm {
  bool trans_first = false, trans_second = false;  // cuBLAS transa, transb
  int64_t m = 0, n = 0, k = 0;                     // cuBLAS m, n, k
  const float* first = nullptr;                    // cuBLAS A
  int64_t ld_first = 0;
  const float* second = nullptr;                   // cuBLAS B
  int64_t ld_second = 0;
  float* c = nullptr;
  int64_t ldc = 0;
};

inline ColMajorGemm map_row_major_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                                       int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  ColMajorGemm g;
  g.trans_first = trans_b;
  g.trans_second = trans_a;
  g.m = n;
  g.n = m;
  g.k = k;
  g.first = b;
  g.ld_first = ldb;
  g.second = a;
  g.ld_second = lda;
  g.c = c;
  g.ldc = ldc;
  return g;
}

}  // namespace tb
