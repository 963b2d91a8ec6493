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

// How a team of nt threads splits one block of C (ms rows x nc columns, mr x nr tiles):
// true = by rows (each thread its row panels, every thread sweeping the whole packed B
// slice), false = by columns (each thread the B panels it packed itself, every thread
// reading all of A). The split with the lighter most-loaded thread wins, by more than
// one row panel's or one column panel's worth (min(mr nc, ms nr) elements) and by more
// than 1/32 of the lighter load; closer than that is a tie, which goes to columns where
// cols_on_tie (A read in place and a B slice of 64 KiB or more: no packed operand then
// crosses between cores' caches) and to rows otherwise. Why a margin: 1024 rows in 6-row
// panels split 510 : 514, which alone had sent every GEMM of the large MLP by columns,
// each thread reading all of A for every B slice; by rows they ran at 95.8-106.5% of
// OpenBLAS against 94.3-97.2% (median 102.9 against 96.8%, 5 alternating runs each, 2
// threads, AMD Zen 3, 6 x 16 tile) and the large MLP trained 9% faster. Ties measured at
// 2 threads (Zen 5): columns for the small MLP's 256-row forward and dA GEMMs, A read in
// place, +14-21% (its training +1.6%); with packed A or tiny B slices columns were
// slower. Tests check the rule.
bool gemm_split_by_rows(int64_t ms, int64_t nc, int64_t mr, int64_t nr, int nt, bool cols_on_tie);

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
