// tests/bench/fake_cblas.cpp — a stand-in BLAS for tests/bench/test_gemm_vs_blas.cpp: a
// row-major cblas_sgemm as a naive double-accumulating loop, so tb_gemm_vs_blas can be
// tested without a system BLAS; with TB_FAKE_CBLAS_WRONG=1 it returns C(0,0) off by
// one, which the tool's result check must catch.
#include <cstdlib>

extern "C" void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a,
                            int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (order != 101) std::abort();  // the tool only calls row-major
  const bool ta = trans_a == 112, tb = trans_b == 112;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) s += double(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      float& out = c[i * ldc + j];
      out = beta == 0.0f ? float(alpha * s) : float(alpha * s + beta * out);
    }
  }
  const char* wrong = std::getenv("TB_FAKE_CBLAS_WRONG");
  if (wrong != nullptr && wrong[0] == '1' && m > 0 && n > 0) c[0] += 1.0f;
}
