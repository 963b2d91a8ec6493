// kernels/cpu/linear_step.cpp — see linear_step.h. B rows, D inputs, O <= 88 outputs
// where compiled for AVX-512, O <= 25 for AVX2 without it, O = 1 elsewhere (wider:
// linear_step_blocked.cpp).
// Per thread, over its share of the rows (as AVX-512 code; the AVX2 code does the same on
// 8-float vectors: O = 1; 2 <= O <= 8 all in dot form, 4-row blocks, 3 outputs a sweep;
// 9 <= O <= 25 in two or three vectors of outputs, 6- or 4-row blocks, zero-padded or with
// 1 to 3 outputs in dot form, no shared vector and no superblocks):
//   O == 1: per row, z = x . w + b (D/16 vector FMAs and one horizontal sum), the loss
//           term, then dw += g x from the same row still in registers/L1.
//   2 <= O <= 20: blocks of 6 rows, every output as dot products along D, 4 outputs a
//           sweep (rows_dot_only): z = x_i . w_j, the loss term, then dW_j += g_ij x_i.
//   O > 20: blocks of rows_per_block rows; the forward sweep over p keeps V = 1 to 5 vectors
//           of 16 outputs per row (W^T packed once per step as D x L, zero-padded), then
//           the backward sweep adds g_i x_i[p] into a private dW^T (D x L) row p (five or
//           six vectors: one backward for two 4-row blocks, row_superblock).
//           O = 16V + n, n not 0, takes the n outputs past the whole vectors in one of
//           three forms (dot_outputs_for, half_outputs_for): as dot products along D
//           (dot_forward / dot_backward on the block's rows, still in L1/L2); as one
//           vector that two rows share, 8 lanes each (2 <= n <= 8 past one to five
//           vectors; past one, only 5 to 8, O = 21 to 24); or in a zero-padded vector.
//           While a block's backward runs, the next block's rows are asked into L2.
// Then every thread sums a slice of D across the threads' private gradients (in
// thread order) into dW (O x D), W^T's pack and that last dW^T -> dW as 16 x 16
// register transposes (AVX-512; element by element in the AVX2 build, whose O <= 25 rows
// of W fit in L1's sets). The element math is tb::mse_element's.
// The slow twin is forward GEMM + mse_loss_grad + GEMM + column_sum
// (tests/kernels/test_linear_step_cpu.cpp).
#include "kernels/cpu/linear_step.h"

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>
#if defined(__AVX512F__)
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wmaybe-uninitialized
// reports wherever they are inlined (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TB_LINEAR_STEP_AVX2 1
#endif

#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_kernels.h"
#include "kernels/scalar_math.h"

namespace tb::cpu {
namespace {

#if defined(__AVX512F__)
using Transposer = gemm_detail::Avx512;
#else
using Transposer = gemm_detail::Portable;
#endif

// Outputs past the last whole vector that go in dot form (dot_forward) rather than in a
// zero-padded vector: O = 16V + n, V >= 1. Measured (Zen 5, D 1024, 1 and 2 threads):
// against padding, n = 1 and 2 +8 to 46%, n = 3 +2 to 17% for V = 2 to 4, from n = 4 or
// 5 on slower, as each dot-form output re-reads the block's rows of X. Against a vector
// two rows share (half_outputs_for): n = 1 +6 to 10% at one thread; n = 2 -5 to -7% for
// V = 1 but +0 to 4% for V = 2 and 3; n = 3 -2 to -7% (the last two in one build, the
// form toggled); past four or five vectors, where a shared vector means 4-row blocks,
// n = 2 and 3 in dot form +2 to 17%. So: n = 1; n = 2 from two vectors on; n = 3 from
// four vectors on.
// AVX2 (8-float vectors, O = 8V + n): n = 1 to 3 past two vectors, n = 1 past three
// (dot_outputs_for). Against a zero-padded third or fourth vector (AMD EPYC Zen 3, D 1024,
// one thread, medians of 5 pairs alternating in one process): O = 17 1.34x, 18 1.35x, 19
// (against the blocked step, which was level with the padded vector) 1.23x; O = 25 1.10x,
// 26 0.98x and 27 1.02x against the blocked step.
constexpr int64_t kDotMaxOutputs = 3;
// Up to this many outputs (O >= 2) every output goes in dot form, kDotGroup at a time
// (rows_dot_only), none in a vector. With one vector of W^T (O <= 16, or 17 to 24 with a
// shared one) every FMA needs its own broadcast of x: 9 zmm loads per 8 FMAs, and an Intel
// Xeon (Ice Lake) loads zmm at about 1.25 a cycle (ymm at 2; measured by an asm loop);
// O < 16 also pads the vector. The dot form loads kDotRows + kDotGroup vectors per
// kDotRows x kDotGroup FMAs. Against the vector forms (Ice Lake, D 1024, X streamed from
// memory, one thread, best of 7 in 3 to 5 alternating rounds): O = 4 2.7x, 8 1.84x, 12
// 1.36x, 16 1.10x, 17 +5 to 16%, 18 +18%, 20 +9%; 22 -4% and 24 -2% (within the rounds'
// spread), so not past 20. Two threads: O = 8 +73%, 16 +4%, 17 +9%.
#if defined(TB_LINEAR_STEP_AVX2)
// AVX2: two 8-float vectors (6-row blocks) against the dot form at O = 9, 10, 12 (Zen 3, one
// thread): 1.06x, 1.17x, 1.41x; one vector (12-row blocks) at O = 5 to 8 0.28 to 0.37x.
constexpr int64_t kAllDotMaxOutputs = 8;
#else
constexpr int64_t kAllDotMaxOutputs = 20;
#endif
// Outputs per dot-form sweep (accumulators kR x kDotGroup, at most kDotAccumulators), and
// rows per block when every output is in dot form (their backward holds kR x kDotGroup
// broadcasts of g). AVX-512: 6 rows against 4 and 8 at O = 4 to 16: 6 faster by 4 to 27%.
#if defined(TB_LINEAR_STEP_AVX2)
// AVX2 (16 ymm registers): 4 rows x 3 outputs, 12 accumulators, 3 of W's rows and one
// of x's vectors. Against 3 x 4 and 6 x 2 (AMD EPYC Zen 3, D 1024, one thread, 5 pairs
// alternating): level or faster from O = 2 to 8 (3 x 4 0.85x at O = 2, 0.89x at 3).
constexpr int kDotGroup = 3;
constexpr int kDotRows = 4;
constexpr int kDotAccumulators = 12;
#else
constexpr int kDotGroup = 4;
constexpr int kDotRows = 6;
constexpr int kDotAccumulators = 24;
#endif
#if defined(__AVX512F__)
// Five 16-float vectors of outputs (4 rows x 5 accumulators in 32 zmm registers) and up to
// 8 more in a shared vector. Against the blocked step (Zen 5, D 1024, 1 and 2 threads):
// +15 to 33% at O = 52 to 67 (four vectors), +1 to 14% at one thread and +4 to 28% at two
// at O = 68 to 88 (four and five); six vectors (4 rows, all 24 accumulators) lost at 96.
constexpr int64_t kOnePassMaxOutputs = 88;
#elif defined(TB_LINEAR_STEP_AVX2)
// O = 1; 2 to 8 all in dot form; 9 to 25 in two or three 8-float vectors (and up to 3 in
// dot form); from 26 on the blocked step. Against the blocked step (AMD EPYC Zen 3, D
// 1024, medians of 5 pairs alternating in one process, one / two threads): O = 2 2.01x /
// 2.15x, 3 1.90x, 4 1.40x / 1.62x, 6 1.22x, 8 1.07x / 1.13x (the dot form: past 8 it
// lost, 0.73x at 16, as a sweep of 3 outputs re-reads the block's x from L1 O / 3 times);
// O = 9 1.22x / 1.12x, 12 1.29x / 1.33x, 13 1.26x, 16 1.21 to 1.32x / 1.30 to 1.39x, 17
// 1.49x / 1.53x, 18 1.34x, 19 1.23x / 1.35x, 20 1.03x / 1.21x, 21 1.07x, 24 0.97 to 1.01x /
// 1.07x, 25 1.10x / 1.15x; four vectors (3-row blocks) at O = 25 to 32 0.94 to 0.97x / 0.90x
// at 32. One backward for two to four blocks (g from L1, dW^T kept in registers for 2 or 4
// columns, as row_superblock) was level or 0.5 to 0.8x at O = 16 to 32: not kept.
// O = 1 against the portable loops: 1.13x one thread, 0.96x [0.92-1.12] two (memory-bound).
constexpr int64_t kOnePassMaxOutputs = 25;
#else
constexpr int64_t kOnePassMaxOutputs = 1;
#endif
constexpr int64_t kLanes = kOnePassMaxOutputs;  // the most outputs a thread sums db for
// Lanes used for O outputs: O rounded up to whole vectors of kVec floats (W^T and dW^T
// rows): zmm (16) where compiled for AVX-512, ymm (8) for AVX2.
#if defined(TB_LINEAR_STEP_AVX2)
constexpr int64_t kVec = 8;
#else
constexpr int64_t kVec = 16;
#endif
constexpr int64_t lanes_for(int64_t o) { return (o + kVec - 1) / kVec * kVec; }
constexpr int64_t dot_outputs_for(int64_t o) {
  if (o >= 2 && o <= kAllDotMaxOutputs) return o;
  if (kVec == 8) return (o > 16 && o < 20) || o == 25 ? o % 8 : 0;  // AVX2: see kDotMaxOutputs
  const int64_t n = o % 16;
  return o > 16 && (n == 1 || (n == 2 && o > 32) || (o > 64 && n <= kDotMaxOutputs)) ? n : 0;
}
// Outputs past the last whole vector that two rows share in one vector (row_block's
// kHalf): O = 16V + h, 1 <= V <= 5, 2 <= h <= 8, where the dot form does not take them.
// Against a zero-padded vector: +12 to 18% at O = 19 to 56, 1 and 2 threads (one FMA per
// row pair and p instead of two; the pair's broadcast is a blend, off the FMA ports).
// AVX-512 only: 0 in the AVX2 build (8-float vectors, none shared).
constexpr int64_t half_outputs_for(int64_t o) {
  return kVec == 16 && o > 16 && o < 96 && dot_outputs_for(o) == 0 && o % 16 >= 2 && o % 16 <= 8 ? o % 16 : 0;
}
// Outputs in whole vectors of their own (zero-padded past O when neither form applies).
constexpr int64_t full_outputs_for(int64_t o) { return o - dot_outputs_for(o) - half_outputs_for(o); }
// Row length of W^T and dW^T: the whole vectors, then the shared one (the half outputs'
// lanes twice); the dot-form outputs follow as rows of their own.
constexpr int64_t vector_lanes(int64_t o) {
  return lanes_for(full_outputs_for(o)) + (half_outputs_for(o) > 0 ? 16 : 0);
}
// Row stride of the dot-form outputs' copies of W and of their dW rows: D padded, as rows
// 4 KiB apart share L1 sets with X's rows (+4 to 9% at n = 8 to 12 when those were tried).
// The cost: at D 1024 dW row j + 1 lies 4096 + 64 bytes past row j, so the backward's load
// of row j aliases the previous step's store of row j + 1 (4K aliasing): the 6 x 4 backward
// alone ran at 59-63% of the FMA loop against 82-88% unpadded. In the whole step (L2-bound)
// unpadded rows read only 1.02-1.07x at O = 8 to 20 (ranges spanning 1), and strides of 1280
// and 1536 lost 2 to 17% (Ice Lake, sixteenth session): left as it is.
constexpr int64_t dot_row_stride(int64_t d) { return (d + 15) / 16 * 16 + 16; }
// Rows sharing one sweep over W^T (O > 1) with v vectors of W^T (a shared one counted):
// kR x V (+ (kR + 1) / 2 shared) accumulators, at most 24 of the 32 zmm registers (the
// rest hold W^T's vectors and broadcasts). Four vectors: 6 rows (5 rows measured the same
// at O = 52 to 64 and 5% slower at 67); five or six: 4.
constexpr int rows_per_block(int v) { return v <= 3 ? 8 : v == 4 ? 6 : 4; }
// Row blocks that share one backward (row_superblock), and the columns p of dW^T it holds
// in registers. For five or six vectors (4-row blocks), two blocks, two columns: against
// row_block's backward per block (Intel Xeon, Ice Lake, D 1024, one thread, median of 4 to
// 6 alternating rounds) +3 to 10% at O = 70, 76, 82, 84, 86, 88, -1 to -5% (within its
// rounds' spread) at 80; three or four blocks, or four columns, slower. Four vectors
// (6-row blocks) sharing two: 10 to 15% slower at O = 64 and 67.
constexpr int super_blocks(int v) { return v >= 5 ? 2 : 1; }
constexpr int kSuperColumns = 2;
constexpr int64_t kPrefetchRows = 8;                // O == 1: software prefetch distance, rows
// Below this many elements of X one thread is faster than waking the team.
constexpr int64_t kParallelMinElems = int64_t{1} << 15;

// The next row block's lines, asked into L2 one per vector step of the dot-form sweeps
// from the block's first sweep on (the AVX2 rows_dot_only, see there), so that the next
// block's first sweep reads L2 rather than memory, and memory is read while this block
// computes. At D 1024 the 256 lines of a 4-row block take two sweeps of 128 steps: the
// whole block at O <= 3, the forward at O = 4 to 6, its first two sweeps at O = 7 and 8.
// Defined in every build: the AVX-512 build's feed_of names it.
struct LineFeed {
  const float* next = nullptr;  // the next line to ask for
  int64_t left = 0;             // lines still to ask for
  void step() {
    if (left > 0) {
      __builtin_prefetch(next, 0, 2);
      next += 16;
      --left;
    }
  }
};

// One thread's sums: gradient (O == 1: dw, D floats; O > 1: dW^T, D x L, then the n
// dot-form outputs' dW rows at stride dot_row_stride(D)), loss, db.
struct Partial {
  Buffer grad;
  // Where this thread's gradient sums start inside grad: half a page from its first row of
  // x (Buffer::get_apart), so that the dot form's stores of dW rows do not hold back its
  // loads of x rows beside them (4K aliasing). At D 1024 (x's rows 4 KiB apart, dW's 4160
  // bytes) and 64-byte aligned x, dW row j starts 2048 + 64 j bytes past x's page offset:
  // for O <= 20 at least 13 lines from it either way. Against sums 48 bytes from x's offset
  // (where trainbench's fell at O = 64) the step at O = 2 to 20, one thread, ran up to 22%
  // faster (medians of 15 pairs 1.05 to 1.22, Ice Lake; docs/performance.md).
  float* at = nullptr;
  double loss = 0;
  double db[kLanes] = {};
};

// Outputs per dot-form sweep for kR rows: kR x J accumulators, at most kDotAccumulators
// (24 of the 32 zmm registers, 12 of the 16 ymm; the rest hold W's rows and x's vectors).
constexpr int dot_group_for(int rows) { return std::min(kDotGroup, kDotAccumulators / rows); }

// f(j0, std::integral_constant J) for n outputs in sweeps of at most kJ from output j0,
// as even as can be (17 in 4s is 3 3 4 3 4): the forward's and the backward's split.
template <int kJ, class F>
inline void for_each_sweep(int64_t n, F&& f) {
  const int64_t sweeps = (n + kJ - 1) / kJ;
  for (int64_t k = 0; k < sweeps; ++k) {
    const int64_t j0 = n * k / sweeps;
    gemm_detail::with_count<kJ>(n * (k + 1) / sweeps - j0, [&](auto j) { f(j0, j); });
  }
}

#if defined(__AVX512F__)

__mmask16 low_lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// O == 1, rows [r0, r1): one read of each row serves both z = x.w + b and dw += g x.
// kRows rows at a time: their kRows dot products are independent chains (one row's
// dot -> horizontal sum -> g -> dw update is a ~50-cycle dependency chain that left the
// core idle between rows), and dw's D floats are loaded and stored once per block,
// not once per row. Every sum keeps the one-row order (dot products per row, dw and
// the double loss/db sums row after row), so results equal the row-at-a-time loop's.
template <int kRows>
void row_block_one_output(const float* xr, const float* t, int64_t d, int64_t dv, __mmask16 tail, const float* w,
                          float b0, float inv_count, float* dw, double* loss, double* db) {
  __m512 acc[kRows];
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t p = 0; p < dv; p += 16) {
    const __m512 wp = _mm512_loadu_ps(w + p);
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) acc[i] = _mm512_fmadd_ps(_mm512_loadu_ps(xr + i * d + p), wp, acc[i]);
  }
  if (tail) {
    const __m512 wp = _mm512_maskz_loadu_ps(tail, w + dv);
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) acc[i] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, xr + i * d + dv), wp, acc[i]);
  }
  __m512 g[kRows];
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    float gi;
    *loss += static_cast<double>(tb::mse_element(_mm512_reduce_add_ps(acc[i]) + b0, t[i], inv_count, &gi));
    *db += static_cast<double>(gi);
    g[i] = _mm512_set1_ps(gi);
  }
  for (int64_t p = 0; p < dv; p += 16) {
    __m512 v = _mm512_loadu_ps(dw + p);
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) v = _mm512_fmadd_ps(g[i], _mm512_loadu_ps(xr + i * d + p), v);
    _mm512_storeu_ps(dw + p, v);
  }
  if (tail) {
    __m512 v = _mm512_maskz_loadu_ps(tail, dw + dv);
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) v = _mm512_fmadd_ps(g[i], _mm512_maskz_loadu_ps(tail, xr + i * d + dv), v);
    _mm512_mask_storeu_ps(dw + dv, tail, v);
  }
}

void rows_one_output(const float* x, const float* t, int64_t r0, int64_t r1, int64_t d, const float* w,
                     float b0, float inv_count, Partial* part) {
  constexpr int kRows = 4;
  float* dw = part->at = part->grad.get_apart(d, x + r0 * d);
  std::fill(dw, dw + d, 0.0f);
  const int64_t dv = d / 16 * 16;
  const __mmask16 tail = low_lanes(d - dv);
  double loss = 0, db = 0;
  int64_t r = r0;
  for (; r + kRows <= r1; r += kRows) {
    // The block kPrefetchRows ahead: the hardware prefetcher alone left one core at
    // ~10 GB/s on 64-float rows. Only within this thread's rows (no pointer past x).
    if (r + kPrefetchRows + kRows <= r1) {
      const float* ahead = x + (r + kPrefetchRows) * d;
      for (int64_t q = 0; q < kRows * d; q += 16) _mm_prefetch(reinterpret_cast<const char*>(ahead + q), _MM_HINT_T0);
    }
    row_block_one_output<kRows>(x + r * d, t + r, d, dv, tail, w, b0, inv_count, dw, &loss, &db);
  }
  for (; r < r1; ++r) row_block_one_output<1>(x + r * d, t + r, d, dv, tail, w, b0, inv_count, dw, &loss, &db);
  part->loss = loss;
  part->db[0] = db;
}

// Two rows' h <= 8 values in one vector, as the shared vector holds them: lo[0, h) in
// lanes [0, h), hi[0, h) in lanes [8, 8 + h) (hi null: zeros), the rest 0. hi - 8 is
// formed, so hi must have 8 floats before it (hi = row + 16V with V >= 1).
inline __m512 load_pair(const float* lo, const float* hi, int64_t h) {
  const __m512 v = _mm512_maskz_loadu_ps(low_lanes(h), lo);
  return hi != nullptr ? _mm512_mask_loadu_ps(v, __mmask16(low_lanes(h) << 8), hi - 8) : v;
}

// acc[0] += v[0..8), acc[1] += v[8..16), in double.
inline void add_as_double(__m512d* acc, __m512 v) {
  acc[0] = _mm512_add_pd(acc[0], _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
  acc[1] = _mm512_add_pd(acc[1], _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
}

// Outputs in dot-product form, vectors along D: the n <= 3 past V whole vectors (O = 16V
// + n; padding them to a vector would waste 16 - n lanes of every FMA: O = 33 filled 33 of
// 48), or all of them for 2 <= O <= 20 (rows_dot_only), J <= 4 a sweep. kR rows x (row
// stride d) against J rows of W (stride ldw):
//   z[i * ldz + j] = x_i . w_j   (kR x J accumulators, one horizontal sum each)
template <int kR, int J>
inline void dot_forward(const float* x, const float* w, int64_t ldw, int64_t d, int64_t dv, __mmask16 tail,
                        float* z, int64_t ldz) {
  __m512 acc[kR][J];
#pragma GCC unroll 16
  for (int i = 0; i < kR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) acc[i][j] = _mm512_setzero_ps();
  auto step = [&](int64_t p, __mmask16 m) {
    __m512 wj[J];
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) wj[j] = _mm512_maskz_loadu_ps(m, w + j * ldw + p);
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i) {
      const __m512 xi = _mm512_maskz_loadu_ps(m, x + i * d + p);
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j) acc[i][j] = _mm512_fmadd_ps(xi, wj[j], acc[i][j]);
    }
  };
  for (int64_t p = 0; p < dv; p += 16) step(p, __mmask16(0xFFFF));
  if (tail) step(dv, tail);
#pragma GCC unroll 16
  for (int i = 0; i < kR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) z[i * ldz + j] = _mm512_reduce_add_ps(acc[i][j]);
}

// Their gradient: dw_j += sum_i g[i * ldg + j] x_i for J rows of dw (stride ldw), the kR
// rows of x still in L1 from the forward.
template <int kR, int J>
inline void dot_backward(const float* x, const float* g, int64_t ldg, int64_t d, int64_t dv, __mmask16 tail,
                         float* dw, int64_t ldw) {
  __m512 gv[kR][J];
#pragma GCC unroll 16
  for (int i = 0; i < kR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) gv[i][j] = _mm512_set1_ps(g[i * ldg + j]);
  auto step = [&](int64_t p, __mmask16 m) {
    __m512 acc[J];
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) acc[j] = _mm512_maskz_loadu_ps(m, dw + j * ldw + p);
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i) {
      const __m512 xi = _mm512_maskz_loadu_ps(m, x + i * d + p);
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j) acc[j] = _mm512_fmadd_ps(gv[i][j], xi, acc[j]);
    }
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) _mm512_mask_storeu_ps(dw + j * ldw + p, m, acc[j]);
  };
  for (int64_t p = 0; p < dv; p += 16) step(p, __mmask16(0xFFFF));
  if (tail) step(dv, tail);
}

#elif defined(TB_LINEAR_STEP_AVX2)
// AVX2 + FMA without AVX-512 (Zen 2/3, Intel before Skylake-SP): the same one-output rows
// and all-dot-form blocks as the AVX-512 code above, on 8-float ymm vectors in 16
// registers (kDotRows x kDotGroup accumulators, at most 12); the sums run row after row
// as there, each dot product over 8 lanes and its own horizontal sum (so the float
// rounding differs from the AVX-512 build's). The vector forms follow the shared dot-form
// code below.

// _mm256_maskload_ps/_mm256_maskstore_ps's mask for lanes [0, n), 0 <= n <= 8: D's last
// d % 8 floats (masked lanes read as 0 and are not written).
inline __m256i low_lanes(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

inline float reduce_add(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// O == 1, kRows rows [xr, xr + kRows d): as the AVX-512 row_block_one_output.
template <int kRows>
void row_block_one_output(const float* xr, const float* t, int64_t d, int64_t dv, __m256i tail, bool has_tail,
                          const float* w, float b0, float inv_count, float* dw, double* loss, double* db) {
  __m256 acc[kRows];
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) acc[i] = _mm256_setzero_ps();
  for (int64_t p = 0; p < dv; p += 8) {
    const __m256 wp = _mm256_loadu_ps(w + p);
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) acc[i] = _mm256_fmadd_ps(_mm256_loadu_ps(xr + i * d + p), wp, acc[i]);
  }
  if (has_tail) {
    const __m256 wp = _mm256_maskload_ps(w + dv, tail);
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) acc[i] = _mm256_fmadd_ps(_mm256_maskload_ps(xr + i * d + dv, tail), wp, acc[i]);
  }
  __m256 g[kRows];
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    float gi;
    *loss += static_cast<double>(tb::mse_element(reduce_add(acc[i]) + b0, t[i], inv_count, &gi));
    *db += static_cast<double>(gi);
    g[i] = _mm256_set1_ps(gi);
  }
  for (int64_t p = 0; p < dv; p += 8) {
    __m256 v = _mm256_loadu_ps(dw + p);
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) v = _mm256_fmadd_ps(g[i], _mm256_loadu_ps(xr + i * d + p), v);
    _mm256_storeu_ps(dw + p, v);
  }
  if (has_tail) {
    __m256 v = _mm256_maskload_ps(dw + dv, tail);
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) v = _mm256_fmadd_ps(g[i], _mm256_maskload_ps(xr + i * d + dv, tail), v);
    _mm256_maskstore_ps(dw + dv, tail, v);
  }
}

void rows_one_output(const float* x, const float* t, int64_t r0, int64_t r1, int64_t d, const float* w,
                     float b0, float inv_count, Partial* part) {
  constexpr int kRows = 4;
  float* dw = part->at = part->grad.get_apart(d, x + r0 * d);
  std::fill(dw, dw + d, 0.0f);
  const int64_t dv = d / 8 * 8;
  const __m256i tail = low_lanes(d - dv);
  double loss = 0, db = 0;
  int64_t r = r0;
  for (; r + kRows <= r1; r += kRows) {
    if (r + kPrefetchRows + kRows <= r1) {  // as the AVX-512 rows_one_output
      const float* ahead = x + (r + kPrefetchRows) * d;
      for (int64_t q = 0; q < kRows * d; q += 16) _mm_prefetch(reinterpret_cast<const char*>(ahead + q), _MM_HINT_T0);
    }
    row_block_one_output<kRows>(x + r * d, t + r, d, dv, tail, d > dv, w, b0, inv_count, dw, &loss, &db);
  }
  for (; r < r1; ++r) row_block_one_output<1>(x + r * d, t + r, d, dv, tail, d > dv, w, b0, inv_count, dw, &loss, &db);
  part->loss = loss;
  part->db[0] = db;
}

// z[i * ldz + j] = x_i . w_j for kR rows of x (stride d) and J rows of w (stride ldw).
template <int kR, int J>
inline void dot_forward(const float* x, const float* w, int64_t ldw, int64_t d, int64_t dv, __m256i tail,
                        float* z, int64_t ldz, LineFeed* feed) {
  __m256 acc[kR][J];
#pragma GCC unroll 16
  for (int i = 0; i < kR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) acc[i][j] = _mm256_setzero_ps();
  auto step = [&](int64_t p, auto load) {
    if (feed != nullptr) feed->step();
    __m256 wj[J];
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) wj[j] = load(w + j * ldw + p);
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i) {
      const __m256 xi = load(x + i * d + p);
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j) acc[i][j] = _mm256_fmadd_ps(xi, wj[j], acc[i][j]);
    }
  };
  for (int64_t p = 0; p < dv; p += 8) step(p, [](const float* a) { return _mm256_loadu_ps(a); });
  if (d > dv) step(dv, [tail](const float* a) { return _mm256_maskload_ps(a, tail); });
#pragma GCC unroll 16
  for (int i = 0; i < kR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) z[i * ldz + j] = reduce_add(acc[i][j]);
}

// dw_j += sum_i g[i * ldg + j] x_i for J rows of dw (stride ldw), row after row.
template <int kR, int J>
inline void dot_backward(const float* x, const float* g, int64_t ldg, int64_t d, int64_t dv, __m256i tail,
                         float* dw, int64_t ldw, LineFeed* feed) {
  __m256 gv[kR][J];
#pragma GCC unroll 16
  for (int i = 0; i < kR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) gv[i][j] = _mm256_set1_ps(g[i * ldg + j]);
  auto step = [&](int64_t p, auto load, auto store) {
    if (feed != nullptr) feed->step();
    __m256 acc[J];
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) acc[j] = load(dw + j * ldw + p);
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i) {
      const __m256 xi = load(x + i * d + p);
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j) acc[j] = _mm256_fmadd_ps(gv[i][j], xi, acc[j]);
    }
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) store(dw + j * ldw + p, acc[j]);
  };
  for (int64_t p = 0; p < dv; p += 8) {
    step(p, [](const float* a) { return _mm256_loadu_ps(a); }, [](float* a, __m256 v) { _mm256_storeu_ps(a, v); });
  }
  if (d > dv) {
    step(dv, [tail](const float* a) { return _mm256_maskload_ps(a, tail); },
         [tail](float* a, __m256 v) { _mm256_maskstore_ps(a, tail, v); });
  }
}

#endif

#if defined(__AVX512F__) || defined(TB_LINEAR_STEP_AVX2)
// Shared by the AVX-512 and the AVX2 code, on their dot_forward / dot_backward, low_lanes
// and kVec.

// The n dot-form outputs of one row block: a copy of W's rows from o0 on, their bias, a
// thread's dW rows for them, and its loss and db sums.
struct DotOutputs {
  const float* w;  // W's rows [o0, o0 + n), at stride ld
  const float* b;  // b + o0
  int64_t n;       // 0: every output is in the vectors
  int64_t ld;      // row stride of w and dw (d padded: rows 4 KiB apart share L1 sets with x's)
  float* dw;       // n rows at stride ld
  double* loss;
  double* db;  // n
#if defined(TB_LINEAR_STEP_AVX2)
  LineFeed* feed = nullptr;  // the next block's lines to ask for during the sweeps (rows_dot_only)
#endif
};
#if defined(TB_LINEAR_STEP_AVX2)
constexpr bool kDotFeed = true;
inline LineFeed* feed_of(const DotOutputs& r) { return r.feed; }
#else
constexpr bool kDotFeed = false;  // and dot_forward / dot_backward take no feed
inline LineFeed* feed_of(const DotOutputs&) { return nullptr; }
#endif

// The n outputs from o0 on, dot_group_for(kR) at a time: z into g, then tb::mse_element
// per output, g their gradients (kR x kCols; the loss and db summed row after row).
template <int kR, int kCols>
void dot_outputs(const float* x, const float* t, int64_t d, int64_t o, int64_t o0, float inv_count,
                 const DotOutputs& r, float (&g)[kR][kCols]) {
  const int64_t dv = d / kVec * kVec;
  const auto tail = low_lanes(d - dv);
  for_each_sweep<dot_group_for(kR)>(r.n, [&](int64_t j0, auto j) {
    constexpr int J = decltype(j)::value;
    if constexpr (kDotFeed) dot_forward<kR, J>(x, r.w + j0 * r.ld, r.ld, d, dv, tail, &g[0][j0], kCols, feed_of(r));
    else dot_forward<kR, J>(x, r.w + j0 * r.ld, r.ld, d, dv, tail, &g[0][j0], kCols);
  });
  for (int i = 0; i < kR; ++i) {
    for (int64_t k = 0; k < r.n; ++k) {
      float gk;
      *r.loss += static_cast<double>(tb::mse_element(g[i][k] + r.b[k], t[i * o + o0 + k], inv_count, &gk));
      r.db[k] += static_cast<double>(gk);
      g[i][k] = gk;
    }
  }
}

template <int kR, int kCols>
void dot_gradients(const float* x, int64_t d, const DotOutputs& r, const float (&g)[kR][kCols]) {
  const int64_t dv = d / kVec * kVec;
  const auto tail = low_lanes(d - dv);
  for_each_sweep<dot_group_for(kR)>(r.n, [&](int64_t j0, auto j) {
    constexpr int J = decltype(j)::value;
    if constexpr (kDotFeed) dot_backward<kR, J>(x, &g[0][j0], kCols, d, dv, tail, r.dw + j0 * r.ld, r.ld, feed_of(r));
    else dot_backward<kR, J>(x, &g[0][j0], kCols, d, dv, tail, r.dw + j0 * r.ld, r.ld);
  });
}

// 2 <= O <= kAllDotMaxOutputs: every output in dot form, kDotRows rows a block: per
// kDotGroup outputs, the forward per vector of p loads kR vectors of x and kDotGroup of W's rows
// for kR x kDotGroup FMAs, the backward the same x (in L1 now) and kDotGroup vectors of
// dW's rows, loaded and stored. W (a copy) and dW: O rows at stride dot_row_stride(d).
// Each row's z and each dW element sum in an order that does not depend on the block
// size, so a row tail (kR = 1) changes nothing.
// Software prefetch: AVX-512 none: asking the next block's rows into L2 during
// the backward (as row_block does) was 15 to 25% slower at O = 2 to 8 (Ice Lake, one
// thread), where the hardware prefetcher keeps up alone; spread over the later forward
// sweeps and the backward, every line or every 4th or 8th, 0.80 to 0.99x at O = 4 to 20
// (a spread from the first sweep on, as AVX2 does, was not measured there).
// AVX2: a line per vector step from the forward's first sweep on (LineFeed). On a Zen 3 the
// first sweep, which reads the block's rows from memory, took a third of rows_dot_only's
// time at O = 8 (perf, one thread); with the feed, medians of 9 pairs alternating in one
// process against none: O = 2 to 8 1.08 to 1.18x one thread; O = 2 to 8 1.06 to 1.12x two.
// From the backward on only 1.10x at O = 8 (two lines a step 0.98x); two or four blocks
// ahead 0.97x of one; prefetcht0 / t2 / nta instead of t1 level or slower.
// Nor D in chunks (2 or more 6-row groups a block, so that a chunk's W rows and x stay in
// L1): chunks of 256, 2 groups, 0.89 to 0.98x at O = 4 to 20 but 17 (1.06x); other chunk
// sizes or more groups 0.70 to 0.89x (docs/performance.md, sixteenth session); on the Zen
// 3, 4 x 4-row blocks in chunks of 128 to 512 (the forward's sums carried in memory
// between chunks) 0.88 to 0.99x, and with the feed 0.84 to 0.91x of the feed alone.
void rows_dot_only(const float* x, const float* t, int64_t r0, int64_t r1, int64_t d, int64_t o, const float* w,
                   const float* b, float inv_count, Partial* part) {
  const int64_t ld = dot_row_stride(d);
  float* dw = part->at = part->grad.get_apart(o * ld, x + r0 * d);
  std::fill(dw, dw + o * ld, 0.0f);
  double loss = 0, db[kAllDotMaxOutputs] = {};
#if defined(TB_LINEAR_STEP_AVX2)
  LineFeed feed;
  const DotOutputs all{w, b, o, ld, dw, &loss, db, &feed};
#else
  const DotOutputs all{w, b, o, ld, dw, &loss, db};
#endif
  const auto block = [&](auto rows, int64_t r) {
    constexpr int kR = decltype(rows)::value;
#if defined(TB_LINEAR_STEP_AVX2)
    // The next block's kR rows (contiguous, kR d floats), when it lies in this thread's rows.
    feed = r + 2 * kR <= r1 ? LineFeed{x + (r + kR) * d, kR * d / 16} : LineFeed{};
#endif
    float g[kR][kAllDotMaxOutputs];
    dot_outputs<kR>(x + r * d, t + r * o, d, o, 0, inv_count, all, g);
    dot_gradients<kR>(x + r * d, d, all, g);
  };
  int64_t r = r0;
  for (; r + kDotRows <= r1; r += kDotRows) block(std::integral_constant<int, kDotRows>{}, r);
  for (; r < r1; ++r) block(std::integral_constant<int, 1>{}, r);
  part->loss = loss;
  std::copy(db, db + o, part->db);
}

#endif

#if defined(__AVX512F__)

// O > 20: kR rows x[0..kR) (row stride d) against W^T (d x L), into dW^T (d x L):
// V vectors of outputs per row (O <= 16V; or O = 16V + n with kDot; or O = 16V + h with
// kHalf, L = 16V + 16). Per p: V loads of W^T, kR broadcasts of x, kR x V FMAs forward;
// the same backward plus V loads and stores of dW^T. kHalf: the pair of rows 2q, 2q + 1
// shares vector zh[q], lanes [0, 8) row 2q's last h outputs, [8, 16) row 2q + 1's (kR
// odd: the last pair has lanes [8, 16) at 0), against W^T's lanes [16V, 16V + 8) stored
// twice; dW^T's last vector sums the two rows' halves apart, added at the end.
constexpr int pairs_of(int rows, bool half) { return half ? (rows + 1) / 2 : 1; }

// kHalf: the pair's broadcast at row i (x_i's lanes [8, 16) on x_{i-1}'s), or a last
// unpaired row alone in lanes [0, 8).
inline __m512 pair_x(int i, __m512 prev, __m512 xi) {
  return i % 2 == 1 ? _mm512_mask_blend_ps(__mmask16(0xFF00), prev, xi) : _mm512_maskz_mov_ps(__mmask16(0x00FF), xi);
}

// The forward of kR rows: z = x W^T + b, then per lane tb::mse_element's loss term and
// gradient, g[i][v] (and the shared vector's gh[q]), the loss and db summed in double.
template <int kR, int V, bool kHalf>
[[gnu::always_inline]] inline void forward_rows(const float* x, const float* t, int64_t d, int64_t o, const float* wt,
                                                const __m512* bias, __m512 two, __m512 inv, __m512d* loss,
                                                __m512d* db, __m512 (&g)[kR][V],
                                                __m512 (&gh)[pairs_of(kR, kHalf)]) {
  constexpr int64_t L = 16 * (V + kHalf);
  constexpr int P = pairs_of(kR, kHalf);
  const int64_t h = o - 16 * V;  // kHalf: the outputs each row has there
  __m512 z[kR][V], zh[P];
#pragma GCC unroll 16
  for (int i = 0; i < kR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) z[i][v] = bias[v];
  if constexpr (kHalf) {
#pragma GCC unroll 8
    for (int q = 0; q < P; ++q) zh[q] = 2 * q + 1 < kR ? bias[V] : _mm512_maskz_mov_ps(__mmask16(0x00FF), bias[V]);
  }
  for (int64_t p = 0; p < d; ++p) {
    __m512 wp[V + kHalf];
#pragma GCC unroll 8
    for (int v = 0; v < V + kHalf; ++v) wp[v] = _mm512_load_ps(wt + p * L + 16 * v);
    __m512 prev = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i) {
      const __m512 xi = _mm512_set1_ps(x[i * d + p]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) z[i][v] = _mm512_fmadd_ps(xi, wp[v], z[i][v]);
      if constexpr (kHalf) {
        if (i % 2 == 1 || i == kR - 1) zh[i / 2] = _mm512_fmadd_ps(pair_x(i, prev, xi), wp[V], zh[i / 2]);
        prev = xi;
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < kR; ++i) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      // tb::mse_element per lane: diff = z - t; grad = 2 diff inv; loss term diff^2.
      // Lanes past O hold 0 - 0 (zero-padded W^T and bias, masked t).
      const __m512 diff = _mm512_sub_ps(z[i][v], _mm512_maskz_loadu_ps(low_lanes(o - 16 * v), t + i * o + 16 * v));
      const __m512 sq = _mm512_mul_ps(diff, diff);
      g[i][v] = _mm512_mul_ps(_mm512_mul_ps(two, diff), inv);
      add_as_double(loss + 2 * v, sq);
      add_as_double(db + 2 * v, g[i][v]);
    }
  }
  if constexpr (kHalf) {  // db + 2V: the even rows' sums (lanes [0, 8)), then the odd rows'
#pragma GCC unroll 8
    for (int q = 0; q < P; ++q) {
      const float* odd = 2 * q + 1 < kR ? t + (2 * q + 1) * o + 16 * V : nullptr;
      const __m512 diff = _mm512_sub_ps(zh[q], load_pair(t + 2 * q * o + 16 * V, odd, h));
      gh[q] = _mm512_mul_ps(_mm512_mul_ps(two, diff), inv);
      add_as_double(loss, _mm512_mul_ps(diff, diff));
      add_as_double(db + 2 * V, gh[q]);
    }
  }
}

// next: rows of the next block (null: none), asked into L2 a line per backward step, so
// that its forward reads them from L2, not memory (+6 to 12% at O = 16 to 51, one thread).
inline void prefetch_line(const float* next, int64_t line, int64_t lines) {
  if (line < lines) __builtin_prefetch(next + 16 * line, 0, 2);
}

// One row block (kR rows, the whole block's g in registers): forward_rows, then dW^T +=
// x_i g_i row after row, V (+1) vectors of dW^T loaded and stored per p. next: the next
// block's kR rows (its kR rows of t asked for at the backward's start).
template <int kR, int V, bool kHalf, bool kDot>
void row_block(const float* x, const float* t, int64_t d, int64_t o, const float* wt, const __m512* bias, __m512 two,
               __m512 inv, float* dwt, __m512d* loss, __m512d* db, const DotOutputs& rem, float inv_count,
               const float* next) {
  constexpr int64_t L = 16 * (V + kHalf);
  __m512 g[kR][V], gh[pairs_of(kR, kHalf)];
  forward_rows<kR, V, kHalf>(x, t, d, o, wt, bias, two, inv, loss, db, g, gh);
  float gr[kR][kDotMaxOutputs];
  if constexpr (kDot) dot_outputs<kR>(x, t, d, o, 16 * V, inv_count, rem, gr);
  const int64_t next_lines = next != nullptr ? (kR * d + 15) / 16 : 0;  // 16 floats a line, at most d
  if (next != nullptr) {  // and its targets (the loss waited on them: 3% of the block's time)
    for (int64_t q = 0; q < kR * o; q += 16) __builtin_prefetch(t + kR * o + q, 0, 2);
  }
  for (int64_t p = 0; p < d; ++p) {
    prefetch_line(next, p, next_lines);
    __m512 acc[V + kHalf];
#pragma GCC unroll 8
    for (int v = 0; v < V + kHalf; ++v) acc[v] = _mm512_load_ps(dwt + p * L + 16 * v);
    __m512 prev = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i) {
      const __m512 xi = _mm512_set1_ps(x[i * d + p]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[v] = _mm512_fmadd_ps(xi, g[i][v], acc[v]);
      if constexpr (kHalf) {
        if (i % 2 == 1 || i == kR - 1) acc[V] = _mm512_fmadd_ps(pair_x(i, prev, xi), gh[i / 2], acc[V]);
        prev = xi;
      }
    }
#pragma GCC unroll 8
    for (int v = 0; v < V + kHalf; ++v) _mm512_store_ps(dwt + p * L + 16 * v, acc[v]);
  }
  if constexpr (kDot) dot_gradients<kR>(x, d, rem, gr);
}

// S row blocks of kR rows, one backward over all S kR of them. With 4-row blocks (five or
// six vectors, kR x V accumulators fill the registers) row_block's backward moves V (+1)
// vectors of dW^T (D x L, 320 KiB at O = 80: in L2) in and out per 4 rows, which L2 can
// barely feed; here each block's g goes to gs (S kR x L floats, L1), and the backward
// holds kP columns p of dW^T in registers while every row adds x_i[p] g_i to them: dW^T
// moves once per S kR rows. The FMAs' order per dW^T element is row_block's (row after
// row), so the sums are bitwise the same. next: the next S kR rows (null: none).
template <int kR, int S, int V, bool kHalf, bool kDot>
void row_superblock(const float* x, const float* t, int64_t d, int64_t o, const float* wt, const __m512* bias,
                    __m512 two, __m512 inv, float* dwt, __m512d* loss, __m512d* db, const DotOutputs& rem,
                    float inv_count, const float* next) {
  constexpr int64_t L = 16 * (V + kHalf);
  constexpr int N = S * kR, P = pairs_of(kR, kHalf);
  static_assert(kR % 2 == 0, "row pairs of the shared vector never straddle two blocks");
  alignas(64) float gs[N][L];  // g of every row: V whole vectors, then the shared one per pair (rows 2q)
  float gr[S][kR][kDotMaxOutputs];
  for (int s = 0; s < S; ++s) {
    __m512 g[kR][V], gh[P];
    forward_rows<kR, V, kHalf>(x + s * kR * d, t + s * kR * o, d, o, wt, bias, two, inv, loss, db, g, gh);
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i)
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) _mm512_store_ps(&gs[s * kR + i][16 * v], g[i][v]);
    if constexpr (kHalf) {
#pragma GCC unroll 8
      for (int q = 0; q < P; ++q) _mm512_store_ps(&gs[s * kR + 2 * q][16 * V], gh[q]);
    }
    if constexpr (kDot) dot_outputs<kR>(x + s * kR * d, t + s * kR * o, d, o, 16 * V, inv_count, rem, gr[s]);
  }
  if (next != nullptr) {
    for (int64_t q = 0; q < N * o; q += 16) __builtin_prefetch(t + N * o + q, 0, 2);
  }
  const int64_t next_lines = next != nullptr ? (N * d + 15) / 16 : 0;
  // kP columns of dW^T from p on: (V + kHalf) kP accumulators; per row, V (+1) loads of g
  // (L1) serve kP x V FMAs.
  const auto columns = [&](auto kp, int64_t p) {
    constexpr int kP = decltype(kp)::value;
    __m512 acc[kP][V + kHalf];
#pragma GCC unroll 4
    for (int c = 0; c < kP; ++c)
#pragma GCC unroll 8
      for (int v = 0; v < V + kHalf; ++v) acc[c][v] = _mm512_load_ps(dwt + (p + c) * L + 16 * v);
    __m512 prev[kP];
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) {
      __m512 xi[kP];
#pragma GCC unroll 4
      for (int c = 0; c < kP; ++c) xi[c] = _mm512_set1_ps(x[i * d + p + c]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        const __m512 gv = _mm512_load_ps(&gs[i][16 * v]);
#pragma GCC unroll 4
        for (int c = 0; c < kP; ++c) acc[c][v] = _mm512_fmadd_ps(xi[c], gv, acc[c][v]);
      }
      if constexpr (kHalf) {
        if (i % 2 == 1) {
          const __m512 gv = _mm512_load_ps(&gs[i - 1][16 * V]);
#pragma GCC unroll 4
          for (int c = 0; c < kP; ++c) acc[c][V] = _mm512_fmadd_ps(pair_x(i, prev[c], xi[c]), gv, acc[c][V]);
        }
#pragma GCC unroll 4
        for (int c = 0; c < kP; ++c) prev[c] = xi[c];
      }
    }
#pragma GCC unroll 4
    for (int c = 0; c < kP; ++c)
#pragma GCC unroll 8
      for (int v = 0; v < V + kHalf; ++v) _mm512_store_ps(dwt + (p + c) * L + 16 * v, acc[c][v]);
  };
  constexpr int kP = kSuperColumns;
  int64_t p = 0, line = 0;
  for (; p + kP <= d; p += kP) {
    for (int k = 0; k < (N * kP + 15) / 16; ++k) prefetch_line(next, line++, next_lines);
    columns(std::integral_constant<int, kP>{}, p);
  }
  for (; p < d; ++p) columns(std::integral_constant<int, 1>{}, p);
  if constexpr (kDot) {
    for (int s = 0; s < S; ++s) dot_gradients<kR>(x + s * kR * d, d, rem, gr[s]);
  }
}
// Rows [r0, r1) in blocks of kR = rows_per_block(V + kHalf). Outputs [16V, O) in dot
// form (kDot) or shared by row pairs (kHalf).
template <int V, bool kHalf>
void rows_many_outputs_v(const float* x, const float* t, int64_t r0, int64_t r1, int64_t d, int64_t o,
                         const float* wt, const float* b, float inv_count, Partial* part) {
  constexpr int64_t L = 16 * (V + kHalf);
  constexpr int kR = rows_per_block(V + kHalf);
  static_assert(kR * V + (kHalf ? (kR + 1) / 2 : 0) <= 24);
  static_assert(V + kHalf <= 8, "the vector loops' unroll pragmas (8) cover every vector, or z and g go to memory");
  const int64_t n = dot_outputs_for(o);
  const int64_t ld = dot_row_stride(d);
  float* dwt = part->at = part->grad.get_apart(d * L + n * ld, x + r0 * d);
  std::fill(dwt, dwt + d * L + n * ld, 0.0f);
  __m512 bias[V + kHalf];
  for (int v = 0; v < V; ++v) bias[v] = _mm512_maskz_loadu_ps(low_lanes(o - 16 * v), b + 16 * v);
  if constexpr (kHalf) bias[V] = load_pair(b + 16 * V, b + 16 * V, o - 16 * V);  // b's last h outputs, twice
  const __m512 two = _mm512_set1_ps(2.0f), inv = _mm512_set1_ps(inv_count);
  __m512d loss[2 * V], db[2 * (V + kHalf)];
  for (int v = 0; v < 2 * V; ++v) loss[v] = _mm512_setzero_pd();
  for (int v = 0; v < 2 * (V + kHalf); ++v) db[v] = _mm512_setzero_pd();
  double dot_loss = 0, dot_db[kDotMaxOutputs] = {};
  const DotOutputs rem{wt + d * L, b + L, n, ld, dwt + d * L, &dot_loss, dot_db};
  // The row loop twice, with and without the dot-form outputs: kept out of the loop that
  // has none, they cost nothing there.
  const auto sweep = [&](auto dot) {
    constexpr bool kDot = decltype(dot)::value;
    constexpr int S = super_blocks(V + kHalf);
    int64_t r = r0;
    if constexpr (S > 1) {
      for (; r + S * kR <= r1; r += S * kR) {
        const float* next = r + 2 * S * kR <= r1 ? x + (r + S * kR) * d : nullptr;
        row_superblock<kR, S, V, kHalf, kDot>(x + r * d, t + r * o, d, o, wt, bias, two, inv, dwt, loss, db, rem,
                                              inv_count, next);
      }
    }
    for (; r + kR <= r1; r += kR) {
      const float* next = r + 2 * kR <= r1 ? x + (r + kR) * d : nullptr;  // never past this thread's rows
      row_block<kR, V, kHalf, kDot>(x + r * d, t + r * o, d, o, wt, bias, two, inv, dwt, loss, db, rem, inv_count,
                                    next);
    }
    for (; r < r1; ++r) {
      row_block<1, V, kHalf, kDot>(x + r * d, t + r * o, d, o, wt, bias, two, inv, dwt, loss, db, rem, inv_count,
                                   nullptr);
    }
  };
  if (n > 0) sweep(std::true_type{});
  else sweep(std::false_type{});
  __m512d loss_sum = loss[0];
  for (int v = 1; v < 2 * V; ++v) loss_sum = _mm512_add_pd(loss_sum, loss[v]);
  part->loss = _mm512_reduce_add_pd(loss_sum) + dot_loss;
  alignas(64) double lanes[L];
  for (int v = 0; v < 2 * (V + kHalf); ++v) _mm512_store_pd(lanes + 8 * v, db[v]);
  std::copy(lanes, lanes + 16 * V, part->db);
  if constexpr (kHalf) {  // the even and the odd rows' sums of each half output
    for (int64_t j = 0; j < 8; ++j) part->db[16 * V + j] = lanes[16 * V + j] + lanes[16 * V + 8 + j];
  } else {
    std::copy(lanes + 16 * V, lanes + L, part->db + 16 * V);
  }
  std::copy(dot_db, dot_db + n, part->db + L);
}

// V = v (1 with a shared vector, 2 to 5) as a template argument.
template <bool kHalf>
void rows_many_outputs_h(int64_t v, const float* x, const float* t, int64_t r0, int64_t r1, int64_t d, int64_t o,
                         const float* wt, const float* b, float inv_count, Partial* part) {
  // V = 1 comes only with a shared vector (O = 21 to 24): up to 20 outputs take rows_dot_only.
  if constexpr (kHalf) {
    if (v == 1) return rows_many_outputs_v<1, true>(x, t, r0, r1, d, o, wt, b, inv_count, part);
  }
  switch (v) {
    case 2: rows_many_outputs_v<2, kHalf>(x, t, r0, r1, d, o, wt, b, inv_count, part); return;
    case 3: rows_many_outputs_v<3, kHalf>(x, t, r0, r1, d, o, wt, b, inv_count, part); return;
    case 4: rows_many_outputs_v<4, kHalf>(x, t, r0, r1, d, o, wt, b, inv_count, part); return;
    default: rows_many_outputs_v<5, kHalf>(x, t, r0, r1, d, o, wt, b, inv_count, part); return;
  }
}

void rows_many_outputs(const float* x, const float* t, int64_t r0, int64_t r1, int64_t d, int64_t o,
                       const float* wt, const float* b, float inv_count, Partial* part) {
  const int64_t v = lanes_for(full_outputs_for(o)) / 16;
  // v == 0: W's rows (its dot-form copy) follow W^T, which is empty then.
  if (v == 0) rows_dot_only(x, t, r0, r1, d, o, wt + d * vector_lanes(o), b, inv_count, part);
  else if (half_outputs_for(o) > 0) rows_many_outputs_h<true>(v, x, t, r0, r1, d, o, wt, b, inv_count, part);
  else rows_many_outputs_h<false>(v, x, t, r0, r1, d, o, wt, b, inv_count, part);
}

#elif defined(TB_LINEAR_STEP_AVX2)

// O > kAllDotMaxOutputs (8): V = ceil(O / 8) vectors of 8 outputs per row, zero-padded past
// O, or O = 8V + n with the n <= kDotMaxOutputs past V >= 2 whole vectors in dot form
// (dot_outputs_for). kR = vector_rows<V>() rows a block: W^T (D x 8V) packed once per
// step; per p the forward loads V vectors of W^T, broadcasts kR values of x and does
// kR x V FMAs into z; the backward loads and stores V vectors of a private dW^T (D x 8V)
// row p and adds x_i[p] g_i for the block's rows, still in L1. kR x V accumulators (z,
// then g), V vectors of W^T or dW^T and one broadcast: at most the 16 ymm registers.
template <int V>
constexpr int vector_rows() {
  return V == 2 ? 6 : 4;
}

// acc[0] += v[0..4), acc[1] += v[4..8), in double.
inline void add_as_double(__m256d* acc, __m256 v) {
  acc[0] = _mm256_add_pd(acc[0], _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  acc[1] = _mm256_add_pd(acc[1], _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

// The forward of kR rows: z = x W^T + b, then per lane tb::mse_element's loss term and
// gradient into g[i][v], the loss and db summed in double (2 accumulators per vector).
template <int kR, int V>
[[gnu::always_inline]] inline void forward_rows(const float* x, const float* t, int64_t d, int64_t o, const float* wt,
                                                const __m256* bias, __m256 two, __m256 inv, __m256d* loss,
                                                __m256d* db, __m256 (&g)[kR][V]) {
  constexpr int64_t L = 8 * V;
  __m256 z[kR][V];
#pragma GCC unroll 8
  for (int i = 0; i < kR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) z[i][v] = bias[v];
  for (int64_t p = 0; p < d; ++p) {
    __m256 wp[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) wp[v] = _mm256_load_ps(wt + p * L + 8 * v);
#pragma GCC unroll 8
    for (int i = 0; i < kR; ++i) {
      const __m256 xi = _mm256_broadcast_ss(x + i * d + p);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) z[i][v] = _mm256_fmadd_ps(xi, wp[v], z[i][v]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < kR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      // tb::mse_element per lane; lanes past the vectors' outputs hold 0 - 0 (zero-padded
      // W^T and bias, masked t).
      const __m256 tv = _mm256_maskload_ps(t + i * o + 8 * v, low_lanes(o - 8 * v));
      const __m256 diff = _mm256_sub_ps(z[i][v], tv);
      g[i][v] = _mm256_mul_ps(_mm256_mul_ps(two, diff), inv);
      add_as_double(loss + 2 * v, _mm256_mul_ps(diff, diff));
      add_as_double(db + 2 * v, g[i][v]);
    }
  }
}

// One block of kR rows: forward_rows (and the dot-form outputs, kDot), then dW^T +=
// x_i g_i row after row. next: the next block's rows (null: none), asked into L2 a line
// per p, so that its forward reads L2, not memory.
template <int kR, int V, bool kDot>
void row_block(const float* x, const float* t, int64_t d, int64_t o, const float* wt, const __m256* bias, __m256 two,
               __m256 inv, float* dwt, __m256d* loss, __m256d* db, const DotOutputs& rem, float inv_count,
               const float* next) {
  constexpr int64_t L = 8 * V;
  __m256 g[kR][V];
  forward_rows<kR, V>(x, t, d, o, wt, bias, two, inv, loss, db, g);
  float gr[kR][kDotMaxOutputs];
  if constexpr (kDot) dot_outputs<kR>(x, t, d, o, L, inv_count, rem, gr);
  const int64_t next_lines = next != nullptr ? (kR * d + 15) / 16 : 0;  // 16 floats a line, at most d
  if (next != nullptr) {
    for (int64_t q = 0; q < kR * o; q += 16) __builtin_prefetch(t + kR * o + q, 0, 2);
  }
  for (int64_t p = 0; p < d; ++p) {
    if (p < next_lines) __builtin_prefetch(next + 16 * p, 0, 2);
    __m256 acc[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[v] = _mm256_load_ps(dwt + p * L + 8 * v);
#pragma GCC unroll 8
    for (int i = 0; i < kR; ++i) {
      const __m256 xi = _mm256_broadcast_ss(x + i * d + p);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[v] = _mm256_fmadd_ps(xi, g[i][v], acc[v]);
    }
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) _mm256_store_ps(dwt + p * L + 8 * v, acc[v]);
  }
  if constexpr (kDot) dot_gradients<kR>(x, d, rem, gr);
}

// Rows [r0, r1) with V vectors of outputs (and dot_outputs_for(o) in dot form), in blocks
// of vector_rows<V>() rows.
template <int V>
void rows_many_outputs_v(const float* x, const float* t, int64_t r0, int64_t r1, int64_t d, int64_t o,
                         const float* wt, const float* b, float inv_count, Partial* part) {
  constexpr int64_t L = 8 * V;
  constexpr int kR = vector_rows<V>();
  const int64_t n = dot_outputs_for(o), o_vec = o - n;
  const int64_t ld = dot_row_stride(d);
  float* dwt = part->at = part->grad.get_apart(d * L + n * ld, x + r0 * d);
  std::fill(dwt, dwt + d * L + n * ld, 0.0f);
  __m256 bias[V];
  for (int v = 0; v < V; ++v) bias[v] = _mm256_maskload_ps(b + 8 * v, low_lanes(o_vec - 8 * v));
  const __m256 two = _mm256_set1_ps(2.0f), inv = _mm256_set1_ps(inv_count);
  __m256d loss[2 * V], db[2 * V];
  for (int v = 0; v < 2 * V; ++v) loss[v] = db[v] = _mm256_setzero_pd();
  double dot_loss = 0, dot_db[kDotMaxOutputs] = {};
  const DotOutputs rem{wt + d * L, b + L, n, ld, dwt + d * L, &dot_loss, dot_db};
  const auto sweep = [&](auto dot) {  // as the AVX-512 code: the row loop with and without dot form
    constexpr bool kDot = decltype(dot)::value;
    int64_t r = r0;
    for (; r + kR <= r1; r += kR) {
      const float* next = r + 2 * kR <= r1 ? x + (r + kR) * d : nullptr;  // never past this thread's rows
      row_block<kR, V, kDot>(x + r * d, t + r * o, d, o, wt, bias, two, inv, dwt, loss, db, rem, inv_count, next);
    }
    for (; r < r1; ++r) {
      row_block<1, V, kDot>(x + r * d, t + r * o, d, o, wt, bias, two, inv, dwt, loss, db, rem, inv_count, nullptr);
    }
  };
  if (n > 0) sweep(std::true_type{});
  else sweep(std::false_type{});
  __m256d loss_sum = loss[0];
  for (int v = 1; v < 2 * V; ++v) loss_sum = _mm256_add_pd(loss_sum, loss[v]);
  alignas(32) double lanes[L];
  _mm256_store_pd(lanes, loss_sum);
  part->loss = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + dot_loss;
  for (int v = 0; v < 2 * V; ++v) _mm256_store_pd(lanes + 4 * v, db[v]);
  std::copy(lanes, lanes + o_vec, part->db);
  std::copy(dot_db, dot_db + n, part->db + o_vec);
}

void rows_many_outputs(const float* x, const float* t, int64_t r0, int64_t r1, int64_t d, int64_t o,
                       const float* wt, const float* b, float inv_count, Partial* part) {
  // vector_lanes(o) == 0 where every output is in dot form: W's copy starts at wt.
  if (o <= kAllDotMaxOutputs) return rows_dot_only(x, t, r0, r1, d, o, wt, b, inv_count, part);
  if (o - dot_outputs_for(o) <= 16) rows_many_outputs_v<2>(x, t, r0, r1, d, o, wt, b, inv_count, part);
  else rows_many_outputs_v<3>(x, t, r0, r1, d, o, wt, b, inv_count, part);
}

#else  // portable: one output as plain loops (wider O take the blocked step, see linear_step.h)

void rows_one_output(const float* x, const float* t, int64_t r0, int64_t r1, int64_t d, const float* w,
                     float b0, float inv_count, Partial* part) {
  float* dw = part->at = part->grad.get_apart(d, x + r0 * d);
  std::fill(dw, dw + d, 0.0f);
  double loss = 0, db = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * d;
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t p = 0; p < d; ++p) s += xr[p] * w[p];
    float g;
    loss += static_cast<double>(tb::mse_element(s + b0, t[r], inv_count, &g));
    db += static_cast<double>(g);
#pragma omp simd
    for (int64_t p = 0; p < d; ++p) dw[p] += g * xr[p];
  }
  part->loss = loss;
  part->db[0] = db;
}

#endif

}  // namespace

int64_t linear_step_one_pass_max_outputs() { return kOnePassMaxOutputs; }

std::string linear_step_implementation() {
  const GemmConfig& g = gemm_config();
#if defined(__AVX512F__)
  const char* one_pass = "AVX-512 intrinsics";
#elif defined(TB_LINEAR_STEP_AVX2)
  const char* one_pass = "AVX2 intrinsics";
#else
  const char* one_pass = "portable loops";
#endif
  const int64_t dot_max = std::min(kAllDotMaxOutputs, kOnePassMaxOutputs);
  const std::string dot_only =
      kOnePassMaxOutputs > 1 ? "O = 2 to " + std::to_string(dot_max) + ": dot products along D, " +
                                   std::to_string(kDotRows) + " rows x " + std::to_string(kDotGroup) +
                                   " outputs a sweep; "
                             : "";
  return dot_only + "O <= " + std::to_string(kOnePassMaxOutputs) + ": one-pass register sweep (" + one_pass +
         "); O > " + std::to_string(kOnePassMaxOutputs) + ": blocks of " +
         std::to_string(kLinearStepBlockRows) + " rows on the " + g.kernel + " " + std::to_string(g.mr) + "x" +
         std::to_string(g.nr) + " GEMM micro-kernel";
}

void detail::check_linear_step_shape(const char* who, int64_t rows, int64_t d, int64_t o) {
  if (o < 1 || d < 1 || rows < 0) {
    throw std::invalid_argument(std::string("tb::cpu::") + who + ": needs O >= 1, D >= 1, B >= 0 (got B=" +
                                std::to_string(rows) + " D=" + std::to_string(d) + " O=" + std::to_string(o) + ")");
  }
}

double linear_mse_step(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                       const float* b, float inv_count, float* dw, float* db) {
  detail::check_linear_step_shape("linear_mse_step", rows, d, o);
  if (o > kOnePassMaxOutputs) return linear_mse_step_blocked(x, t, rows, d, o, w, b, inv_count, dw, db);
  thread_local Buffer wt_buf;
  thread_local std::vector<Partial> parts;
  const int want = rows * d >= kParallelMinElems ? std::max(1, omp_get_max_threads()) : 1;
  if (parts.size() < static_cast<size_t>(want)) parts.resize(static_cast<size_t>(want));
  const int64_t L = vector_lanes(o), n_dot = dot_outputs_for(o);
  const int64_t ld_dot = dot_row_stride(d);
  for (int i = 0; i < want; ++i) {  // sized here, not in the region
    parts[i].grad.get((o == 1 ? d : d * L + n_dot * ld_dot) + Buffer::kApartSlack);
  }
  float* wt = o > 1 ? wt_buf.get(d * L + n_dot * ld_dot) : nullptr;
  Partial* part = parts.data();
  int team = 1;

  const int64_t o_vec = o - n_dot;  // outputs in W^T's and dW^T's lanes [0, o_vec) (then dot form)
  const int64_t o_full = full_outputs_for(o), n_half = half_outputs_for(o);  // o_vec = o_full + n_half
  // tid of n threads: pack a slice of W^T, sum its rows, then reduce a slice of D.
  auto body = [&](int tid, int n) {
    // The slice of D, in whole 16-float lines (the transposes' 16 x 16 register blocks).
    const int64_t lines = (d + 15) / 16;
    const int64_t p_lo = std::min(d, lines * tid / n * 16), p_hi = std::min(d, lines * (tid + 1) / n * 16);
    if (wt != nullptr) {
      // W's rows lie d floats apart: element by element with p outer (48 rows of 4 KiB
      // in one L1 set at D 1024) the pack and the final dW^T -> dW took 12% of the step
      // at O = 48; as 16 x 16 register transposes they read and write whole lines (the
      // AVX2 build's O <= 25 rows take the element-by-element transpose).
      gemm_detail::transpose<Transposer>(w + p_lo, d, o_vec, p_hi - p_lo, wt + p_lo * L, L);
      for (int64_t p = p_lo; p < p_hi; ++p) {
        std::fill(wt + p * L + o_vec, wt + (p + 1) * L, 0.0f);
        if (n_half > 0) std::copy_n(wt + p * L + o_full, 8, wt + p * L + o_full + 8);  // the shared vector's twin half
      }
      for (int64_t j = 0; j < n_dot; ++j) {  // the dot-form rows of W, after W^T
        const float* row = w + (L + j) * d;
        std::copy(row + p_lo, row + p_hi, wt + d * L + j * ld_dot + p_lo);
      }
    }
    if (n > 1) {
#pragma omp barrier
    }
    const int64_t r0 = rows * tid / n, r1 = rows * (tid + 1) / n;
    if (o == 1) rows_one_output(x, t, r0, r1, d, w, b[0], inv_count, &part[tid]);
#if defined(__AVX512F__) || defined(TB_LINEAR_STEP_AVX2)
    else rows_many_outputs(x, t, r0, r1, d, o, wt, b, inv_count, &part[tid]);
#endif
    if (n > 1) {
#pragma omp barrier
    }
    if (o == 1) {
      for (int64_t p = p_lo; p < p_hi; ++p) {
        float s = 0.0f;
        for (int k = 0; k < n; ++k) s += part[k].at[p];
        dw[p] = s;
      }
    } else {
      // Rows [p_lo, p_hi) of dW^T summed over the threads in thread order into thread 0's
      // (nobody else reads them now), then transposed into dW's columns.
      float* sum = part[0].at;
      for (int k = 1; k < n; ++k) {
        const float* gk = part[k].at;
#pragma omp simd
        for (int64_t e = p_lo * L; e < p_hi * L; ++e) sum[e] += gk[e];
      }
      gemm_detail::transpose<Transposer>(sum + p_lo * L, L, p_hi - p_lo, o_full, dw + p_lo, d);
      for (int64_t p = p_lo; p < p_hi; ++p) {  // the shared vector: the even rows' sums + the odd rows'
        for (int64_t j = o_full; j < o_vec; ++j) dw[j * d + p] = sum[p * L + j] + sum[p * L + j + 8];
      }
    }
    for (int64_t j = o_vec; j < o; ++j) {  // the dot-form outputs' rows, after dW^T (d x L)
      for (int64_t p = p_lo; p < p_hi; ++p) {
        float s = 0.0f;
        for (int k = 0; k < n; ++k) s += part[k].at[d * L + (j - o_vec) * ld_dot + p];
        dw[j * d + p] = s;
      }
    }
  };
  if (want == 1) {
    body(0, 1);
  } else {
#pragma omp parallel num_threads(want)
    {
#pragma omp single nowait
      team = omp_get_num_threads();
      body(omp_get_thread_num(), omp_get_num_threads());
    }
  }
  double loss = 0;
  for (int j = 0; j < o; ++j) {
    double s = 0;
    for (int k = 0; k < team; ++k) s += part[k].db[j];
    db[j] = static_cast<float>(s);
  }
  for (int k = 0; k < team; ++k) loss += part[k].loss;
  return loss;
}

}  // namespace tb::cpu
