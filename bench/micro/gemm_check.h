// bench/micro/gemm_check.h — is a measured GEMM's result right? The benchmarks check C
// at sampled elements against a double dot product before a rate counts: a wrong
// kernel must not report a speed. Row-major, op(A) M x K, op(B) K x N as tb::cpu::gemm.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tb::bench {

struct GemmOperands {
  bool ta, tb;
  int64_t m, n, k;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
};

struct GemmError {
  double worst = 0;   // max |C(i,j) - exact| / bound; <= 1 is right
  int64_t i = 0, j = 0;  // where the worst one is
};

// Over `probes` elements (the first is C's last element, where edge tiles end; the
// rest spread by two primes), |C(i,j) - exact| / bound with bound = ((k + 8) 2^-23 +
// extra) * sum_p |a_ip b_pj|: fp32 rounding of any summation order, plus `extra` for a
// reduced-precision mode's own error (TF32: 2^-8).
inline GemmError gemm_error(const GemmOperands& g, const float* c, int64_t ldc, int probes, double extra = 0.0) {
  GemmError e;
  for (int64_t probe = 0; probe < probes; ++probe) {
    const int64_t i = probe == 0 ? g.m - 1 : (probe * 7919) % g.m;
    const int64_t j = probe == 0 ? g.n - 1 : (probe * 104729) % g.n;
    double dot = 0.0, mag = 0.0;
    for (int64_t p = 0; p < g.k; ++p) {
      const double x = g.ta ? g.a[p * g.lda + i] : g.a[i * g.lda + p];
      const double y = g.tb ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j];
      dot += x * y;
      mag += std::fabs(x * y);
    }
    const double bound = (double(g.k + 8) * std::ldexp(1.0, -23) + extra) * mag + 1e-30;
    const double err = std::fabs(double(c[i * ldc + j]) - dot) / bound;
    if (!(err <= e.worst)) {  // NaN too: it must not hide behind a smaller error
      e.worst = std::isnan(err) ? INFINITY : err;
      e.i = i, e.j = j;
      if (std::isinf(e.worst)) break;
    }
  }
  return e;
}

}  // namespace tb::bench
