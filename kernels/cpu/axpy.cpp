// kernels/cpu/axpy.cpp — see axpy.h. One pass, OpenMP over contiguous slices when
// the vector is large enough to pay for a parallel region (as elementwise.cpp).
#include "kernels/cpu/axpy.h"

#include <omp.h>

#include <string>

#include "kernels/error.h"

namespace tb::cpu {
namespace {

constexpr int64_t kParallelMinElems = int64_t{1} << 16;  // below: a fork/join costs more than the loop

}  // namespace

void add_inplace(float* dst, const float* src, int64_t n) {
  if (n < 0) throw Error("tb::cpu::add_inplace: negative size n = " + std::to_string(n));
  if (n == 0) return;
  if (dst == nullptr || src == nullptr) throw Error("tb::cpu::add_inplace: null pointer");
#pragma omp parallel for simd schedule(static) if (n >= kParallelMinElems && omp_get_max_threads() > 1)
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

}  // namespace tb::cpu
