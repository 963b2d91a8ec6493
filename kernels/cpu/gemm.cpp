// kernels/cpu/gemm.cpp — float32 GEMM on the CPU: cache blocking, packing, a
// register-blocked micro-kernel and OpenMP over tiles of C (the cpu-omp backend).
// Row-major. M rows of C, N columns of C, K the reduction length;
// C (M x N) = alpha * op(A) (M x K) * op(B) (K x N) + beta * C.
// The slow twin is the naive triple loop in tests/kernels/test_gemm_cpu.cpp.
#include "kernels/cpu/gemm.h"

#include <omp.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace tb::cpu {
namespace {

// ---- blocking parameters --------------------------------------------------------
// The kMR x kNR micro-tile of C is accumulated in registers, sized to the vector
// register file (plus kNR/width B vectors and one A broadcast):
//   AVX-512: 12 x 32 = 24 zmm accumulators of 32 registers (intrinsics);
//   otherwise 6 x 16 = 12 ymm accumulators of 16 (the classic 6x16 kernel), written
//   as plain loops the compiler vectorises.
#if defined(__AVX512F__)
#define TB_GEMM_AVX512 1
constexpr int64_t kMR = 12;
constexpr int64_t kNR = 32;
#else
constexpr int64_t kMR = 6;
constexpr int64_t kNR = 16;
#endif
// Cache blocks, BLIS style, chosen by measurement on the large MLP's shapes (2 cores,
// 48 KiB L1d and 2 MiB L2 each): an A micro-panel (kMR x kKC, 18 KiB) stays in L1 while
// the kernel walks along the B slice (kKC x kNC, 768 KiB, in L2). kKC in 256..512 and
// kNC in 256..1024 measured within noise of each other; the larger kKC means fewer
// read-modify-write sweeps over C. kNC is a multiple of kNR.
constexpr int64_t kKC = 384;
constexpr int64_t kNC = 512;
// Rows of A packed at once per K slice: 4096 x 384 floats = 6 MiB per thread at most.
constexpr int64_t kPackRows = 4096;
// Floats of one packed A micro-panel, in either layout (see pack_a).
constexpr int64_t kAPanel = kMR * kKC;
// Below this many multiply-adds (m*n*k) one thread is faster than an OpenMP fork/join.
constexpr int64_t kParallelMinMacs = int64_t{1} << 19;

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Runs body(i) for i in [0, n), spread over the OpenMP team (static schedule) when
// `parallel`, else inline on the calling thread: a parallel region with a false if()
// clause still costs ~0.2 us in libgomp, a lot next to a small GEMM.
template <class Body>
void parallel_for(int64_t n, bool parallel, const Body& body) {
  if (!parallel || n < 2 || omp_get_max_threads() == 1) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) body(i);
}

// ---- thread-local packing buffers -------------------------------------------------
// 64-byte aligned so packed B rows are whole cache lines / zmm loads.
template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64}));
  }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t{64}); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const { return true; }
};
using PackBuffer = std::vector<float, AlignedAllocator<float>>;

// Returns at least n floats of this thread's buffer; grows only, so steady-state
// calls (same or smaller shapes) never allocate.
float* scratch(PackBuffer& buf, int64_t n) {
  if (buf.size() < static_cast<std::size_t>(n)) buf.resize(static_cast<std::size_t>(n));
  return buf.data();
}

// ---- packing ------------------------------------------------------------------------
// A block op(A)[i0 .. i0+mc) x [p0 .. p0+kc) becomes ceil(mc/kMR) micro-panels of
// kMR x kKC floats each. Rows past mc are zero-filled: the kernel computes them but
// never stores them, and zeros keep stale (say denormal or NaN) values out of the FMAs.
// The kernel only broadcasts single A elements, so any fixed layout works; we keep the
// one that makes packing a straight copy:
//   !trans_a (A is M x K): "row-major" panel,    op(A)(i, p) at i * kKC + p
//    trans_a (A is K x M): "column-major" panel, op(A)(i, p) at p * kMR + i
void pack_a(bool trans_a, const float* a, int64_t lda, int64_t i0, int64_t p0, int64_t mc,
            int64_t kc, float* __restrict ap) {
  for (int64_t ir = 0; ir < mc; ir += kMR, ap += kAPanel) {
    const int64_t rows = std::min(kMR, mc - ir);
    if (trans_a) {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = a + (p0 + p) * lda + i0 + ir;
        float* dst = ap + p * kMR;
        for (int64_t i = 0; i < rows; ++i) dst[i] = src[i];
        for (int64_t i = rows; i < kMR; ++i) dst[i] = 0.0f;
      }
    } else {
      for (int64_t i = 0; i < rows; ++i) {
        const float* src = a + (i0 + ir + i) * lda + p0;
        std::copy(src, src + kc, ap + i * kKC);
      }
      for (int64_t i = rows; i < kMR; ++i) std::fill(ap + i * kKC, ap + i * kKC + kc, 0.0f);
    }
  }
}

// B slice op(B)[p0 .. p0+kc) x [j0 .. j0+nc) becomes ceil(nc/kNR) micro-panels, each
// kc x kNR contiguous (op(B)(p, j) at p * kNR + j), zero-padded past nc (as for A):
// the kernel loads whole rows of kNR as vectors. With trans_b (B stored N x K) this is
// a transpose; it is the only packing that is not a plain copy.
void pack_b(bool trans_b, const float* b, int64_t ldb, int64_t p0, int64_t j0, int64_t kc,
            int64_t nc, float* __restrict bp) {
  for (int64_t jr = 0; jr < nc; jr += kNR, bp += kc * kNR) {
    const int64_t cols = std::min(kNR, nc - jr);
    if (trans_b) {
      // Column j of op(B) is row j of B, so each packed row takes one element from each
      // of `cols` rows of B: a gather (AVX-512 has one; measured ~10% faster overall than
      // strided scalar stores). Each source row is still walked sequentially over p.
      const float* src = b + (j0 + jr) * ldb + p0;
      for (int64_t p = 0; p < kc; ++p) {
        float* dst = bp + p * kNR;
        if (cols == kNR) {
#pragma omp simd
          for (int64_t j = 0; j < kNR; ++j) dst[j] = src[j * ldb + p];
        } else {
          for (int64_t j = 0; j < cols; ++j) dst[j] = src[j * ldb + p];
          for (int64_t j = cols; j < kNR; ++j) dst[j] = 0.0f;
        }
      }
    } else if (cols == kNR) {
      // Fixed-length row copies: the compiler emits two vector moves, no memcpy call.
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b + (p0 + p) * ldb + j0 + jr;
        float* dst = bp + p * kNR;
        for (int64_t j = 0; j < kNR; ++j) dst[j] = src[j];
      }
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b + (p0 + p) * ldb + j0 + jr;
        float* dst = bp + p * kNR;
        for (int64_t j = 0; j < cols; ++j) dst[j] = src[j];
        for (int64_t j = cols; j < kNR; ++j) dst[j] = 0.0f;
      }
    }
  }
}

// ---- micro-kernel ---------------------------------------------------------------------
// acc (kMR x kNR) = sum over p < kc of opA(i, p) * bp[p][j]  (kc rank-1 updates), then
// C[0..mr) x [0..nr) = alpha * acc + beta * C, with beta == 0 never reading C.
// kAColMajor picks the A panel layout (see pack_a); a row-major panel's rows are
// a_stride floats apart (kKC when packed, lda when read in place). Per p: kNR/16
// vector loads of B, kMR broadcasts of A, kMR*kNR/16 FMAs.
#if defined(TB_GEMM_AVX512)
// AVX-512 intrinsics: 24 zmm accumulators written out, so keeping them in registers
// does not depend on the auto-vectoriser; N edges are masked stores.
template <bool kAColMajor>
void micro_kernel(int64_t kc, const float* __restrict ap, int64_t a_stride, const float* __restrict bp,
                  float alpha, float beta, float* __restrict c, int64_t ldc, int64_t mr, int64_t nr) {
  static_assert(kNR == 32, "the AVX-512 kernel holds two zmm per row");
  // The C tile is written (and with beta != 0 read) only at the end: ask for its lines
  // now so their misses overlap the kc FMA steps instead of stalling the stores.
  for (int64_t i = 0; i < mr; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + kNR - 1), _MM_HINT_T0);
  }
  __m512 acc[kMR][2];
#pragma GCC unroll 16
  for (int64_t i = 0; i < kMR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_load_ps(bp + p * kNR);
    const __m512 b1 = _mm512_load_ps(bp + p * kNR + 16);
    _mm_prefetch(reinterpret_cast<const char*>(bp + (p + 8) * kNR), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(bp + (p + 8) * kNR + 16), _MM_HINT_T0);
#pragma GCC unroll 16
    for (int64_t i = 0; i < kMR; ++i) {
      const __m512 a = _mm512_set1_ps(kAColMajor ? ap[p * kMR + i] : ap[i * a_stride + p]);
      acc[i][0] = _mm512_fmadd_ps(a, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(a, b1, acc[i][1]);
    }
  }
  // Masked stores cover the N edge; rows past mr are simply not written.
  const __mmask16 m0 = nr >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nr) - 1);
  const __mmask16 m1 = nr >= 32 ? __mmask16(0xFFFF) : nr <= 16 ? __mmask16(0) : __mmask16((1u << (nr - 16)) - 1);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
  for (int64_t i = 0; i < kMR; ++i) {
    if (i >= mr) break;
    float* c_row = c + i * ldc;
    __m512 r0 = _mm512_mul_ps(va, acc[i][0]), r1 = _mm512_mul_ps(va, acc[i][1]);
    if (beta != 0.0f) {
      r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, c_row), r0);
      r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, c_row + 16), r1);
    }
    _mm512_mask_storeu_ps(c_row, m0, r0);
    _mm512_mask_storeu_ps(c_row + 16, m1, r1);
  }
}
#else
// Portable: all trip counts but kc are compile-time constants, so at -O3 the compiler
// unrolls i and vectorises j, keeping acc in registers.
template <bool kAColMajor>
void micro_kernel(int64_t kc, const float* __restrict ap, int64_t a_stride, const float* __restrict bp,
                  float alpha, float beta, float* __restrict c, int64_t ldc, int64_t mr, int64_t nr) {
  bp = static_cast<const float*>(__builtin_assume_aligned(bp, 64));
  // p = 0 initialises acc (kc >= 1 here), which saves zero-filling it.
  float acc[kMR][kNR];
#pragma GCC unroll 16
  for (int64_t i = 0; i < kMR; ++i) {
    const float a_i0 = ap[kAColMajor ? i : i * a_stride];
#pragma omp simd
    for (int64_t j = 0; j < kNR; ++j) acc[i][j] = a_i0 * bp[j];
  }
  for (int64_t p = 1; p < kc; ++p) {
    const float* b_row = bp + p * kNR;
#pragma GCC unroll 16
    for (int64_t i = 0; i < kMR; ++i) {
      const float a_ip = kAColMajor ? ap[p * kMR + i] : ap[i * a_stride + p];
#pragma omp simd
      for (int64_t j = 0; j < kNR; ++j) acc[i][j] += a_ip * b_row[j];
    }
  }

  if (mr == kMR && nr == kNR) {
    // Full tile: contiguous row updates of kNR floats.
    for (int64_t i = 0; i < kMR; ++i) {
      float* c_row = c + i * ldc;
      if (beta == 0.0f) {
#pragma omp simd
        for (int64_t j = 0; j < kNR; ++j) c_row[j] = alpha * acc[i][j];
      } else {
#pragma omp simd
        for (int64_t j = 0; j < kNR; ++j) c_row[j] = alpha * acc[i][j] + beta * c_row[j];
      }
    }
  } else {
    // Edge tile (M or N remainder): only the valid mr x nr corner is written.
    for (int64_t i = 0; i < mr; ++i) {
      float* c_row = c + i * ldc;
      for (int64_t j = 0; j < nr; ++j)
        c_row[j] = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * c_row[j];
    }
  }
}
#endif

// ---- one tile of C, on one thread -----------------------------------------------------
// C[i0 .. i0+tile_m) x [j0 .. j0+tile_n) over the whole K, in cache blocks. For each
// kKC slice of K: get the A rows of the tile ready (up to kPackRows at a time), then
// for each kNC column block pack the B slice (kc x nc) and sweep micro-tiles: each A
// micro-panel (L1) meets every B micro-panel of the slice (L2).
// A not transposed is read in place: kMR rows of A, kc floats each, are already what
// the kernel broadcasts from (kMR short streams), so only a last, partial panel is
// copied (zero-padded). Measured up to ~10% faster on the small MLP's shapes; except
// when lda is a multiple of 1024 floats: rows 4 KiB apart all fall into one L1 set
// and evict each other and the B panel, so such an A is packed, as is a transposed A
// (a plain copy of kMR floats per p). B is always packed: read in place its kc rows
// would be ldb apart, a page each.
// The first K slice applies the caller's beta; later slices accumulate (beta = 1).
void gemm_tile(bool trans_a, bool trans_b, int64_t i0, int64_t j0, int64_t tile_m,
               int64_t tile_n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  thread_local PackBuffer a_buf;
  thread_local PackBuffer b_buf;
  float* ap = scratch(a_buf, ceil_div(std::min(tile_m, kPackRows), kMR) * kAPanel);
  float* bp = scratch(b_buf, round_up(std::min(tile_n, kNC), kNR) * std::min(k, kKC));

  for (int64_t is = 0; is < tile_m; is += kPackRows) {
    const int64_t ms = std::min(kPackRows, tile_m - is);
    const bool a_in_place = !trans_a && lda % 1024 != 0;
    const int64_t full_rows = a_in_place ? ms / kMR * kMR : 0;  // rows read in place
    for (int64_t pc = 0; pc < k; pc += kKC) {
      const int64_t kc = std::min(kKC, k - pc);
      const float beta_slice = pc == 0 ? beta : 1.0f;
      // Packed: every panel (trans_a), or only the partial last one (into panel 0).
      if (full_rows < ms) pack_a(trans_a, a, lda, i0 + is + full_rows, pc, ms - full_rows, kc, ap);
      for (int64_t jc = 0; jc < tile_n; jc += kNC) {
        const int64_t nc = std::min(kNC, tile_n - jc);
        pack_b(trans_b, b, ldb, pc, j0 + jc, kc, nc, bp);
        for (int64_t ir = 0; ir < ms; ir += kMR) {
          const int64_t mr = std::min(kMR, ms - ir);
          const bool in_place = ir < full_rows;
          const float* ap_panel = in_place ? a + (i0 + is + ir) * lda + pc : ap + ((ir - full_rows) / kMR) * kAPanel;
          const int64_t a_stride = in_place ? lda : kKC;
          float* c_row = c + (i0 + is + ir) * ldc + j0 + jc;
          for (int64_t jr = 0; jr < nc; jr += kNR) {
            const float* bp_panel = bp + (jr / kNR) * kc * kNR;
            const int64_t nr = std::min(kNR, nc - jr);
            if (trans_a)
              micro_kernel<true>(kc, ap_panel, kMR, bp_panel, alpha, beta_slice, c_row + jr, ldc, mr, nr);
            else
              micro_kernel<false>(kc, ap_panel, a_stride, bp_panel, alpha, beta_slice, c_row + jr, ldc, mr, nr);
          }
        }
      }
    }
  }
}

// Splits C into tm x tn equal tiles, one per thread. Each tile packs all of its own
// B columns and A rows, so splitting M repeats B's packing tm times and splitting N
// repeats A's tn times; pick the grid with the least repeated work. Weights (measured
// on the suite's shapes): a transposing B pack costs 1.5x a copy; splitting N costs 2x
// per A row because threads then also write neighbouring parts of the same C rows
// (cache lines shared at tile edges: 3x slower at K = 10), so M splits win for square C.
struct TileGrid {
  int64_t tm = 1, tn = 1;
};

TileGrid choose_grid(int64_t m, int64_t n, int64_t k, bool trans_b, int64_t threads) {
  TileGrid best;
  if (threads <= 1 || m * n * k < kParallelMinMacs) return best;
  const int64_t tm_cap = ceil_div(m, kMR), tn_cap = ceil_div(n, kNR);
  const double a_cost = 2.0, b_cost = trans_b ? 1.5 : 1.0;
  double best_cost = 0;
  int64_t best_tiles = 0;
  for (int64_t tm = 1; tm <= threads; ++tm) {
    if (threads % tm != 0) continue;
    const int64_t g_m = std::min(tm, tm_cap), g_n = std::min(threads / tm, tn_cap);
    const int64_t tiles = g_m * g_n;
    const double cost = double(g_n) * double(m) * a_cost + double(g_m) * double(n) * b_cost;
    if (tiles > best_tiles || (tiles == best_tiles && cost < best_cost)) {
      best = {g_m, g_n};
      best_tiles = tiles;
      best_cost = cost;
    }
  }
  return best;
}

// C = beta * C (k == 0 or alpha == 0); beta == 0 writes zeros without reading C.
void scale_c(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  if (beta == 1.0f) return;
  parallel_for(m, m * n >= (int64_t{1} << 16), [=](int64_t i) {
    float* c_row = c + i * ldc;
    if (beta == 0.0f) {
      std::fill(c_row, c_row + n, 0.0f);
    } else {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) c_row[j] *= beta;
    }
  });
}

// ---- skinny shapes (the linear model: O = 1 output) ---------------------------------
// Padding a single row or column to a kMR x kNR micro-tile would waste 12x or 32x
// the work, so two vector shapes get a direct loop instead.

// N == 1, A not transposed: C[i] = alpha * dot(A[i, :], w) + beta * C[i], where w is
// op(B)'s only column: contiguous (w_stride 1) when trans_b, else strided by ldb.
// The forward pass y = X w^T of a 1-output layer.
void gemm_col_vector(int64_t m, int64_t k, float alpha, const float* a, int64_t lda,
                     const float* w, int64_t w_stride, float beta, float* c, int64_t ldc) {
  parallel_for(m, m * k >= kParallelMinMacs, [=](int64_t i) {
    const float* a_row = a + i * lda;
    float sum = 0.0f;
    if (w_stride == 1) {  // separate loop: a unit stride the compiler can see vectorises well
#pragma omp simd reduction(+ : sum)
      for (int64_t p = 0; p < k; ++p) sum += a_row[p] * w[p];
    } else {
      for (int64_t p = 0; p < k; ++p) sum += a_row[p] * w[p * w_stride];
    }
    c[i * ldc] = beta == 0.0f ? alpha * sum : alpha * sum + beta * c[i * ldc];
  });
}

// M == 1, B not transposed: C[0, :] = alpha * sum_p x_p * B[p, :] + beta * C[0, :], x
// being op(A)'s only row (contiguous, or strided by lda when trans_a). Streams B's rows
// once; columns are split into chunks that are summed in registers/L1 and can run in
// parallel. The weight gradient dW = dy^T X of a 1-output layer.
void gemm_row_vector(int64_t n, int64_t k, float alpha, const float* x, int64_t x_stride,
                     const float* b, int64_t ldb, float beta, float* c) {
  constexpr int64_t kChunk = 256;
  parallel_for(ceil_div(n, kChunk), n * k >= kParallelMinMacs, [=](int64_t chunk) {
    const int64_t j0 = chunk * kChunk;
    const int64_t w = std::min(kChunk, n - j0);
    float acc[kChunk] = {};
    for (int64_t p = 0; p < k; ++p) {
      const float x_p = x[p * x_stride];
      const float* b_row = b + p * ldb + j0;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) acc[j] += x_p * b_row[j];
    }
    for (int64_t j = 0; j < w; ++j)
      c[j0 + j] = beta == 0.0f ? alpha * acc[j] : alpha * acc[j] + beta * c[j0 + j];
  });
}

void check_ld(const char* name, int64_t ld, int64_t row_len) {
  if (ld < std::max<int64_t>(row_len, 1))
    throw std::invalid_argument(std::string("tb::cpu::gemm: ") + name + " = " +
                                std::to_string(ld) + " is smaller than the row length " +
                                std::to_string(row_len));
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m < 0 || n < 0 || k < 0)
    throw std::invalid_argument("tb::cpu::gemm: negative dimension m=" + std::to_string(m) +
                                " n=" + std::to_string(n) + " k=" + std::to_string(k));
  if (m == 0 || n == 0) return;
  check_ld("ldc", ldc, n);
  if (k == 0 || alpha == 0.0f) {  // BLAS semantics: A and B are not read
    scale_c(m, n, beta, c, ldc);
    return;
  }
  check_ld("lda", lda, trans_a ? m : k);
  check_ld("ldb", ldb, trans_b ? k : n);

  if (n == 1 && !trans_a) {
    gemm_col_vector(m, k, alpha, a, lda, b, trans_b ? 1 : ldb, beta, c, ldc);
    return;
  }
  if (m == 1 && !trans_b) {
    gemm_row_vector(n, k, alpha, a, trans_a ? lda : 1, b, ldb, beta, c);
    return;
  }

  // One tile per thread (results do not depend on the grid: every element's K sum runs
  // in the same order, so any thread count gives bitwise-identical C).
  const TileGrid grid = choose_grid(m, n, k, trans_b, omp_get_max_threads());
  const int64_t tile_m = round_up(ceil_div(m, grid.tm), kMR);
  const int64_t tile_n = round_up(ceil_div(n, grid.tn), kNR);
  const int64_t tm = ceil_div(m, tile_m), tn = ceil_div(n, tile_n);
  const int64_t tiles = tm * tn;

  parallel_for(tiles, tiles > 1, [=](int64_t t) {
    const int64_t i0 = (t / tn) * tile_m;
    const int64_t j0 = (t % tn) * tile_n;
    gemm_tile(trans_a, trans_b, i0, j0, std::min(tile_m, m - i0), std::min(tile_n, n - j0), k,
              alpha, a, lda, b, ldb, beta, c, ldc);
  });
}

const char* gemm_implementation() {
#if defined(TB_GEMM_AVX512)
  return "tb::cpu::gemm: own blocked GEMM, AVX-512 12x32 micro-kernel, OpenMP tiles; no BLAS";
#else
  return "tb::cpu::gemm: own blocked GEMM, portable 6x16 micro-kernel, OpenMP tiles; no BLAS";
#endif
}

}  // namespace tb::cpu
