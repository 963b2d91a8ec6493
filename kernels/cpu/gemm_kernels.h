// kernels/cpu/gemm_kernels.h — the register-blocked micro-kernels behind tb::cpu::gemm
// (internal: included by kernels/cpu/gemm.cpp and linear_step_blocked.cpp). Each kernel K computes one tile of
// C, at most MR x NR; run<kCols, R, V> computes its first R rows and first V of its
// K::kVectors column vectors of W = NR / kVectors columns (full tiles: R = MR, V = kVectors):
//   acc (R x V*W) = sum over p < kc of opA(i, p) * bp[p * ldb + j]   (kc rank-1 updates)
//   C[0..mr) x [0..nr) = alpha * acc + beta * C   (beta == 0 never reads C; mr <= R, nr <= V*W)
// bp is a packed B micro-panel (kc x NR, zero-padded, 64-byte aligned; ldb = NR), or rows
// of a matrix read in place (ldb its row length, a multiple of 16 floats, 64-byte aligned:
// the blocked linear step's X). Columns past nr are computed, never stored. A comes as
//   rows (kCols false): R row pointers, opA(i, p) = arow[i][p]   (A read in place, or copied rows)
//   cols (kCols true): a column-major panel, opA(i, p) = ap[p * ap_ld + i]   (packed from a transposed A,
//                      ap_ld = MR; or a row-major matrix read in place as its transpose, ap_ld its row length)
// Rows past mr may point anywhere readable: they are computed, never stored.
// Per p: V vector loads of B, R broadcasts of A, R*V FMAs. The narrower variants exist
// for edge tiles: the last row panel of a 256-row C holds 4 of the 12 x 32 AVX-512 tile's
// 12 rows, and a 10-column C fills one of its two vectors; computing the whole tile there
// cost 3% of the small MLP's GEMM time and 40% of its 10-output layer's (measured A/B).
// Each kernel is compiled for its own ISA (target attributes), so one binary carries
// all of them and gemm.cpp picks one at run time from the CPU's properties.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wmaybe-uninitialized
// reports wherever they are inlined (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#define TB_GEMM_X86 1
#define TB_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
#define TB_TARGET_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace tb::cpu::gemm_detail {

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }
// Below this many multiply-adds (m*n*k) one thread is faster than an OpenMP fork/join.
constexpr int64_t kParallelMinMacs = int64_t{1} << 19;

// Prefetches the C tile's rows: they are written (and with beta != 0 read) only at
// the end, so their misses overlap the kc FMA steps instead of stalling the stores.
// Every 64-byte line of a row: one each 16 floats and the last float (a row need not
// start on a line, so NR floats can span NR / 16 + 1 lines).
template <int64_t NR>
inline void prefetch_c(const float* c, int64_t ldc, int64_t mr) {
  for (int64_t i = 0; i < mr; ++i) {
#pragma GCC unroll 4
    for (int64_t j = 0; j < NR - 1; j += 16) __builtin_prefetch(c + i * ldc + j);
    __builtin_prefetch(c + i * ldc + NR - 1);
  }
}

// Edge tiles (mr < MR or nr < NR) of the 256-bit and portable kernels: write the valid
// corner from a full tile held in memory.
template <int64_t MR, int64_t NR>
inline void store_corner(const float (&acc)[MR][NR], float alpha, float beta, float* c, int64_t ldc, int64_t mr,
                         int64_t nr) {
  for (int64_t i = 0; i < mr; ++i) {
    float* c_row = c + i * ldc;
    for (int64_t j = 0; j < nr; ++j)
      c_row[j] = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * c_row[j];
  }
}

// f(std::integral_constant<int64_t, J>) with J = min(max(j, 1), kMax): a run-time count
// (vectors of a tile, outputs of a sweep) as a template argument.
template <int64_t kMax, class F>
inline void with_count(int64_t j, F&& f) {
  if constexpr (kMax > 1) {
    if (j < kMax) return with_count<kMax - 1>(j, f);
  }
  f(std::integral_constant<int64_t, kMax>{});
}

#if defined(TB_GEMM_X86)
// ---- AVX-512: kMR x 16 kV, kV zmm per row, kMR x kV accumulators of 32 registers --------
// Per p: kV vector loads of B, kMR broadcasts of A, kMR x kV FMAs. Two tiles of 24
// accumulators: 12 x 32 (14 zmm loads per 24 FMAs) and 8 x 48 (11 per 24). An Intel Xeon
// (Ice Lake-SP) loads zmm at about 1.25 a cycle (docs/results/cpu-intel-icelake-2026-11-24/
// dot-at-f433551/zmm_load_rate.txt), so 12 x 32 keeps its load ports ~93% busy to feed the
// FMAs at their peak, 8 x 48 ~73%.
template <int64_t kMR, int64_t kV>
struct Avx512Tile {
  static constexpr int64_t MR = kMR, NR = 16 * kV;
  static constexpr int64_t kVectors = kV;       // vectors per row of the tile (run's V)
  static constexpr bool kZmmTranspose = true;   // transpose() in 16 x 16 register blocks
  // The name TB_CPU_GEMM_KERNEL and env.json use (with_kernel maps names to kernels);
  // other shapes exist only in ad-hoc measurements.
  static constexpr const char* kName =
      kMR == 12 && kV == 2 ? "avx512" : kMR == 8 && kV == 3 ? "avx512-8x48" : "avx512-unnamed";

  // R <= MR rows and V <= kV vectors of 16 columns computed: the narrower variants serve
  // edge tiles (the last row panel of M = 256 holds 4 rows of 12; N = 10 needs one vector)
  // at the cost of the rows and columns they hold, not of a whole tile.
  template <bool kCols, int64_t R = MR, int64_t V = kV>
  TB_TARGET_AVX512 static void run(int64_t kc, const float* const* arow, const float* __restrict ap, int64_t ap_ld,
                                   const float* __restrict bp, float alpha, float beta, float* __restrict c,
                                   int64_t ldc, int64_t mr, int64_t nr, int64_t ldb = NR) {
    static_assert(R >= 1 && R <= MR && V >= 1 && V <= kV);
    prefetch_c<16 * V>(c, ldc, mr);
    const float* r[R];
    if (!kCols) {
#pragma GCC unroll 16
      for (int64_t i = 0; i < R; ++i) r[i] = arow[i];
    }
    __m512 acc[R][V];
#pragma GCC unroll 16
    for (int64_t i = 0; i < R; ++i)
#pragma GCC unroll 4
      for (int64_t v = 0; v < V; ++v) acc[i][v] = _mm512_setzero_ps();
#pragma GCC unroll 2
    for (int64_t p = 0; p < kc; ++p) {
      __m512 b[V];
#pragma GCC unroll 4
      for (int64_t v = 0; v < V; ++v) {
        b[v] = _mm512_load_ps(bp + p * ldb + 16 * v);
        _mm_prefetch(reinterpret_cast<const char*>(bp + (p + 8) * ldb + 16 * v), _MM_HINT_T0);
      }
#pragma GCC unroll 16
      for (int64_t i = 0; i < R; ++i) {
        const __m512 a = _mm512_set1_ps(kCols ? ap[p * ap_ld + i] : r[i][p]);
#pragma GCC unroll 4
        for (int64_t v = 0; v < V; ++v) acc[i][v] = _mm512_fmadd_ps(a, b[v], acc[i][v]);
      }
    }
    // Masked stores cover the N edge; rows past mr are not written.
    __mmask16 mask[V];
#pragma GCC unroll 4
    for (int64_t v = 0; v < V; ++v) {
      const int64_t n = nr - 16 * v;  // columns of vector v
      mask[v] = n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
    }
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
    for (int64_t i = 0; i < R; ++i) {
      if (i >= mr) break;
      float* c_row = c + i * ldc;
#pragma GCC unroll 4
      for (int64_t v = 0; v < V; ++v) {
        __m512 o = _mm512_mul_ps(va, acc[i][v]);
        if (beta != 0.0f) o = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask[v], c_row + 16 * v), o);
        _mm512_mask_storeu_ps(c_row + 16 * v, mask[v], o);
      }
    }
  }
};
using Avx512 = Avx512Tile<12, 2>;
using Avx512Wide = Avx512Tile<8, 3>;

// dst[c * dst_ld + i] = src[i * ld + c] for a 16 x 16 block of floats (i, c < 16): the
// transposing B pack of the AVX-512 tiles, 16 columns of op(B) at a time, in registers
// (two unpack stages order each 128-bit lane, two 128-bit shuffles move the lanes)
// instead of one gathered element at a time. Measured: pack_b was 3% of the small
// MLP's profile, the W^T packs of its forward GEMMs most of it.
TB_TARGET_AVX512 inline void transpose16x16(const float* src, int64_t ld, float* dst, int64_t dst_ld) {
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * ld);
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // lane k of t[2i]: a(4k) b(4k) a(4k+1) b(4k+1); t[2i+1]: +2, +3
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // s[4g + m], lane k: column 4k + m of rows 4g .. 4g+3.
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    const __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * g + 2]), d = _mm512_castps_pd(t[4 * g + 3]);
    r[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  // Column 4k + m = lane k of s[m], s[4 + m], s[8 + m], s[12 + m]: a 4 x 4 lane transpose.
#pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) {
    const __m512 x0 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0x44), x1 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0xEE);
    const __m512 x2 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0x44);
    const __m512 x3 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0xEE);
    _mm512_storeu_ps(dst + (0 + m) * dst_ld, _mm512_shuffle_f32x4(x0, x2, 0x88));
    _mm512_storeu_ps(dst + (4 + m) * dst_ld, _mm512_shuffle_f32x4(x0, x2, 0xDD));
    _mm512_storeu_ps(dst + (8 + m) * dst_ld, _mm512_shuffle_f32x4(x1, x3, 0x88));
    _mm512_storeu_ps(dst + (12 + m) * dst_ld, _mm512_shuffle_f32x4(x1, x3, 0xDD));
  }
}

// ---- AVX2 + FMA: 6 x 16, two ymm per row, 12 accumulators of 16 registers --------------
struct Avx2 {
  static constexpr int64_t MR = 6, NR = 16;
  static constexpr int64_t kVectors = 2;  // ymm per row of the tile
  static constexpr bool kZmmTranspose = false;
  static constexpr const char* kName = "avx2";

  // R rows and V vectors of 8 columns, as Avx512::run.
  template <bool kCols, int64_t R = MR, int64_t V = 2>
  TB_TARGET_AVX2 static void run(int64_t kc, const float* const* arow, const float* __restrict ap, int64_t ap_ld,
                                 const float* __restrict bp, float alpha, float beta, float* __restrict c,
                                 int64_t ldc, int64_t mr, int64_t nr, int64_t ldb = NR) {
    static_assert(R >= 1 && R <= MR && (V == 1 || V == 2));
    prefetch_c<8 * V>(c, ldc, mr);
    const float* r[R];
    if (!kCols) {
#pragma GCC unroll 8
      for (int64_t i = 0; i < R; ++i) r[i] = arow[i];
    }
    __m256 acc[R][V];
#pragma GCC unroll 8
    for (int64_t i = 0; i < R; ++i)
#pragma GCC unroll 2
      for (int64_t v = 0; v < V; ++v) acc[i][v] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int64_t p = 0; p < kc; ++p) {
      __m256 b[V];
#pragma GCC unroll 2
      for (int64_t v = 0; v < V; ++v) b[v] = _mm256_load_ps(bp + p * ldb + 8 * v);
#pragma GCC unroll 8
      for (int64_t i = 0; i < R; ++i) {
        const __m256 a = _mm256_broadcast_ss(kCols ? ap + p * ap_ld + i : r[i] + p);
#pragma GCC unroll 2
        for (int64_t v = 0; v < V; ++v) acc[i][v] = _mm256_fmadd_ps(a, b[v], acc[i][v]);
      }
    }
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    if (mr == R && nr == 8 * V) {
#pragma GCC unroll 8
      for (int64_t i = 0; i < R; ++i) {
        float* c_row = c + i * ldc;
#pragma GCC unroll 2
        for (int64_t v = 0; v < V; ++v) {
          __m256 o = _mm256_mul_ps(va, acc[i][v]);
          if (beta != 0.0f) o = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c_row + 8 * v), o);
          _mm256_storeu_ps(c_row + 8 * v, o);
        }
      }
      return;
    }
    float tile[R][8 * V];
    // Unrolled, as every loop over acc: an acc indexed by a run-time i would have to
    // live in memory, and GCC then stores it after every FMA (measured: 59 instead of
    // ~100 GFLOP/s on one Zen 5 core).
#pragma GCC unroll 8
    for (int64_t i = 0; i < R; ++i)
#pragma GCC unroll 2
      for (int64_t v = 0; v < V; ++v) _mm256_storeu_ps(tile[i] + 8 * v, acc[i][v]);
    store_corner<R, 8 * V>(tile, alpha, beta, c, ldc, mr, nr);
  }
};
#endif

// ---- portable: 6 x 16 as plain loops ----------------------------------------------------
// All trip counts but kc are compile-time constants, so at -O3 the compiler unrolls i
// and vectorises j for whatever the build targets, keeping acc in registers.
struct Portable {
  static constexpr int64_t MR = 6, NR = 16;
  static constexpr int64_t kVectors = 2;  // halves of NR
  static constexpr bool kZmmTranspose = false;
  static constexpr const char* kName = "portable";

  // R rows and V halves of NR columns, as Avx512::run.
  template <bool kCols, int64_t R = MR, int64_t V = 2>
  static void run(int64_t kc, const float* const* arow, const float* __restrict ap, int64_t ap_ld,
                  const float* __restrict bp, float alpha, float beta, float* __restrict c, int64_t ldc, int64_t mr,
                  int64_t nr, int64_t ldb = NR) {
    static_assert(R >= 1 && R <= MR && (V == 1 || V == 2));
    constexpr int64_t W = NR / 2 * V;
    prefetch_c<W>(c, ldc, mr);
    float acc[R][W] = {};
    for (int64_t p = 0; p < kc; ++p) {
      const float* b_row = bp + p * ldb;
#pragma GCC unroll 8
      for (int64_t i = 0; i < R; ++i) {
        const float a_ip = kCols ? ap[p * ap_ld + i] : arow[i][p];
#pragma omp simd
        for (int64_t j = 0; j < W; ++j) acc[i][j] += a_ip * b_row[j];
      }
    }
    store_corner<R, W>(acc, alpha, beta, c, ldc, mr, nr);
  }
};

// The one place a kernel name becomes a kernel: f(K{}) for the kernel K whose kName is
// `name`, returning what f returns. gemm(), the blocked linear step and the recorded
// tile (GemmConfig's mr x nr) all go through it; unknown names (gemm.cpp checks them
// against the CPU first) throw.
template <class F>
inline decltype(auto) with_kernel(const std::string& name, F&& f) {
#if defined(TB_GEMM_X86)
  if (name == Avx512::kName) return f(Avx512{});
  if (name == Avx512Wide::kName) return f(Avx512Wide{});
  if (name == Avx2::kName) return f(Avx2{});
#endif
  if (name != Portable::kName) throw std::invalid_argument("tb::cpu: no GEMM micro-kernel named \"" + name + "\"");
  return f(Portable{});
}

// The kernel the calling thread's last blocked GEMM or blocked linear step ran (its
// kName; nullptr before any): what the tests compare with the name they asked for.
inline thread_local const char* last_kernel_run = nullptr;

// One tile of at most K::MR x K::NR through the narrowest variant that covers it: a
// third, two thirds or all of MR rows, as many of the K::kVectors vectors of columns as
// nr needs (the edge tiles above). Arguments as K::run; kCols picks how A is addressed.
template <class K, bool kCols>
inline void run_tile(int64_t kc, const float* const* arow, const float* ap, int64_t ap_ld, const float* bp,
                     float alpha, float beta, float* c, int64_t ldc, int64_t mr, int64_t nr, int64_t ldb = K::NR) {
  constexpr int64_t MR = K::MR, kV = K::kVectors;
  const int64_t v = ceil_div(nr, K::NR / kV);
  const auto rows = [&](auto r) {
    with_count<kV>(v, [&](auto vv) {
      K::template run<kCols, decltype(r)::value, decltype(vv)::value>(kc, arow, ap, ap_ld, bp, alpha, beta, c, ldc,
                                                                       mr, nr, ldb);
    });
  };
  if (mr <= MR / 3) return rows(std::integral_constant<int64_t, MR / 3>{});
  if (mr <= 2 * MR / 3) return rows(std::integral_constant<int64_t, 2 * MR / 3>{});
  rows(std::integral_constant<int64_t, MR>{});
}

// dst[c * dst_ld + i] = src[i * ld + c] for i < rows, c < cols: the transposing packs
// (op(B) from a B stored N x K; W^T for the linear step) and dW^T -> dW, in 16 x 16
// register blocks where the AVX-512 kernel runs, element by element elsewhere.
template <class K>
inline void transpose(const float* src, int64_t ld, int64_t rows, int64_t cols, float* dst, int64_t dst_ld) {
  int64_t i = 0;
#if defined(TB_GEMM_X86)
  if constexpr (K::kZmmTranspose) {
    for (; i + 16 <= rows; i += 16) {
      int64_t c = 0;
      for (; c + 16 <= cols; c += 16) transpose16x16(src + i * ld + c, ld, dst + c * dst_ld + i, dst_ld);
      for (; c < cols; ++c) {
        for (int64_t r = i; r < i + 16; ++r) dst[c * dst_ld + r] = src[r * ld + c];
      }
    }
  }
#endif
  for (int64_t c = 0; c < cols; ++c) {
#pragma omp simd
    for (int64_t r = i; r < rows; ++r) dst[c * dst_ld + r] = src[r * ld + c];
  }
}

}  // namespace tb::cpu::gemm_detail
