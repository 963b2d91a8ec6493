// kernels/cpu/gemm.h — single-precision GEMM on the CPU (OpenMP, cache-blocked).
// Row-major: C (M x N) = alpha * op(A) * op(B) + beta * C, where op(A) is M x K
// (A stored M x K with lda, or K x M when trans_a) and op(B) is K x N (B stored
// K x N with ldb, or N x K when trans_b). beta == 0 ignores C's old contents
// (NaN-safe). Uses the calling thread's OpenMP team size (omp_set_num_threads).
// The CUDA twin (kernels/cuda/gemm.cu, tb::cuda::gemm) takes the same arguments
// plus a handle and stream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb::cpu {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// The micro-kernel and blocking this process uses, chosen from the CPU's properties
// (kernels/cpu/cpu_props.h) at first use, or forced with TB_CPU_GEMM_KERNEL:
//   avx512   12 x 32 tile, 24 zmm accumulators (full-width and double-pumped AVX-512:
//            on 256-bit halves it still issues half the instructions of AVX2; AMD)
//   avx512-8x48  8 x 48 tile, 24 zmm accumulators, fewer zmm loads per FMA (Intel)
//   avx2     6 x 16 tile, 12 ymm accumulators (AVX2 + FMA)
//   portable 6 x 16 tile, plain loops the compiler vectorises
// Blocking: kc = the K slice whose A micro-panel (mr x kc) fills half of L1d, in 16s,
// within [128, 1024]; nc = the B slice (kc x nc) filling L2, in nr multiples, within
// [4 nr, 4096]. (On a Zen 5 core, 48 KiB / 1 MiB: kc 512, nc 512, measured 3% faster
// than kc 384 at the large MLP's shapes; docs/performance.md.)
struct GemmConfig {
  std::string kernel;        // "avx512", "avx512-8x48", "avx2" or "portable"
  int64_t mr = 0, nr = 0;    // micro-tile of C held in registers
  int64_t kc = 0, nc = 0;    // cache blocks (K slice, N slice)
  std::string vector_unit;   // what the kernel runs on, in words
  std::string chosen_by;     // why this kernel: the CPUID facts, or the override
};
const GemmConfig& gemm_config();

// The blocking rule above, for given cache sizes and micro-tile (tests check it).
void gemm_blocking(int64_t l1d_bytes, int64_t l2_bytes, int64_t mr, int64_t nr, int64_t* kc, int64_t* nc);

// Kernels this CPU can run, best first.
std::vector<std::string> gemm_kernels_supported();

// Tests and benchmarks: use `name` (one of gemm_kernels_supported()) from now on, or
// go back to the automatic choice with "". Throws std::invalid_argument otherwise.
// Not thread-safe against concurrent gemm calls.
void set_gemm_kernel(const std::string& name);

// The kernel (a GemmConfig::kernel name) that the calling thread's last blocked GEMM or
// blocked linear step (linear_mse_step_blocked) ran, nullptr before any: tests check
// that a name runs the kernel it names. Vector shapes (M or N of 1) set nothing.
const char* gemm_kernel_last_run();

// What this build's gemm is, for env.json: our own kernels (no BLAS) and the
// micro-kernel and blocking in use.
std::string gemm_implementation();

}  // namespace tb::cpu
