// kernels/cpu/linear_step_blocked.cpp — see linear_step.h: the linear MSE step for
// outputs too wide for the one-pass register sweep (linear_step.cpp), on the GEMM
// micro-kernels (kernels/cpu/gemm_kernels.h). Shapes: B rows, D inputs, O outputs.
//
// Why not two GEMMs: z = X W^T and dW = g^T X each pack all of X (B x D, 16 MiB at
// B 4096, D 1024) and each read it from memory; at O = 128 the packing alone was a
// fifth of the GEMM time (perf, Zen 5). Here each block of kBlockRows rows of X is
// copied once into a padded buffer Xb (rows of D inputs, a constant 1, zeros: D + 1
// rounded up to 16, plus 16 floats, as rows 4 KiB apart would share L1 sets) and both
// products read it from L1/L2:
//   forward   z (rows x O_pad) = Xb [W^T; b]   A = Xb's rows,  B = [W^T; b] packed once per step
//   backward  [dW db] += g^T Xb                 A = g read as g^T (MR outputs of each row),
//                                               B = Xb's rows in place (ldb = Xb's row length)
// The 1 column adds the bias in the forward and gives db as the backward's column D. z
// and g are row-major (rows x O_pad); [dW db] (O x (D+1), rows padded to whole NR panels)
// is copied into dW and db once at the end. Threads split a block's rows in the forward
// and the loss, then [dW db]'s tiles in the backward (a barrier between), and a thread
// done with its share takes runs another has not started (team_work.h): every sum has
// one order whatever the thread count or whoever runs it, so results are bitwise equal
// for any team size.
// Measured against the two-GEMM path in trainbench (Zen 5, D 1024, batch 4096): O = 128
// +30%, O = 256 +23%, O = 64 +4..8% over the one-pass sweep. Until the tenth session the
// backward computed dW^T (A = Xb read as X^T, a 4 KiB stride between rows, half a line
// used per row); as g^T Xb each B panel (rows x NR of Xb) stays in L1 for all O / MR
// output groups: Ice Lake, alternating rounds, O = 96 / 128 / 256 +6% / +12% / +4% at
// one thread, 0% / +16% / +1.5% at two; dW and db bitwise the same.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_kernels.h"
#include "kernels/cpu/linear_step.h"
#include "kernels/cpu/team_work.h"
#include "kernels/scalar_math.h"

namespace tb::cpu {
namespace {

using gemm_detail::ceil_div;
using gemm_detail::kParallelMinMacs;
using gemm_detail::round_up;
using gemm_detail::run_tile;
using gemm_detail::transpose;
using gemm_detail::with_kernel;

// Rows per block: a multiple of every kernel's MR (12, 8, 6). At D 1024, 96 rows x 1056
// floats = 396 KiB of Xb in L2; each block pays two barriers and one pass over [dW db].
// 48 to 288 rows measured within 2% of each other (O 128 and 256, 1 and 2 threads).
constexpr int64_t kBlockRows = kLinearStepBlockRows;

// Backward tiles handed out at a time (one tile is ~0.4 us at 96 rows; a run of 4 keeps
// the counter's cost near 1%).
constexpr int64_t kTileRun = 4;

struct Args {
  const float *x, *t;
  int64_t rows, d, o;
  const float *w, *b;
  float inv_count;
  float *dw, *db;
};

// The step on kernel K. Column D of Xb holds 1 and row D of W^T holds b, so the
// forward adds the bias and the backward's column D of [dW db] is db (the column sums of g).
template <class K>
double blocked_step(const Args& a, int want) {
  constexpr int64_t MR = K::MR, NR = K::NR;
  static_assert(kBlockRows % MR == 0, "row groups never straddle blocks: losses[] is indexed by row / MR");
  const int64_t d = a.d, o = a.o, rows = a.rows;
  const int64_t d1 = d + 1;                           // inputs and the constant 1
  const int64_t op = round_up(o, NR), np = op / NR;  // outputs padded to whole NR panels
  const int64_t ldx = round_up(d1, 16) + 16;          // Xb's row length (see the top)
  const int64_t nj = ceil_div(d1, NR);                // NR-column panels of [dW db]
  const int64_t ldw = nj * NR;                         // [dW db]'s row length
  // The forward's K slices: D + 1 in floor((D + 1) / kc) equal slices, at least one, so
  // each is kc to 2 kc long (1025 as 513 + 512, not 512 + 512 + 1: a slice of one would
  // load and store every z tile for one FMA).
  const int64_t kslice = ceil_div(d1, std::max<int64_t>(1, d1 / std::max<int64_t>(gemm_config().kc, 16)));
  thread_local Buffer wp_buf, xb_buf, gp_buf, dwb_buf;
  thread_local std::vector<double> group_loss;
  float* const wp = wp_buf.get(np * d1 * NR);         // [W^T; b]: panel s holds D+1 rows x NR
  // The block's rows of X, then 1, then 0s. The backward's last column panel reads whole
  // vectors up to round_up(D + 1, 16) <= ldx - 16: inside the row.
  float* const xb = xb_buf.get(kBlockRows * ldx);
  // z, then g, rows x O_pad, row-major. The backward's last output group reads up to
  // O rounded up to run_tile's row count (MR / 3, 2 MR / 3 or MR), at most O_pad.
  float* const gp = gp_buf.get(kBlockRows * op);
  float* const dwb = dwb_buf.get(round_up(o, MR) * ldw);  // [dW db], O x (D+1) padded to ldw
  group_loss.assign(static_cast<size_t>(ceil_div(rows, MR)), 0.0);
  // The team uses these pointers: inside the region the thread_local names would be the
  // worker's own (empty) buffers.
  double* const losses = group_loss.data();
  // share_runs's counters: the forward's row-group runs, then the backward's tile runs.
  WorkCounter* const fwd_next = work_counters(2 * want);
  WorkCounter* const bwd_next = fwd_next + want;

  auto body = [&](int tid, int n) {
    const auto barrier = [n] {
      if (n > 1) {
#pragma omp barrier
      }
    };
    // The forward's run of row groups out of ng: half a thread's share (see below).
    const auto group_run = [n](int64_t ng) { return ceil_div(ng, 2 * n); };
    int64_t p_lo, p_hi;  // this thread's slice of D in whole 16-float lines: W^T's pack, dW's copy
    own_share(tid, n, d, 16, &p_lo, &p_hi);
    for (int64_t s = 0; s < np; ++s) {  // pack [W^T; b], zero past O
      const int64_t cols = std::min(NR, o - s * NR);
      float* panel = wp + s * d1 * NR;
      transpose<K>(a.w + s * NR * d + p_lo, d, cols, p_hi - p_lo, panel + p_lo * NR, NR);
      for (int64_t p = p_lo; p < p_hi; ++p) std::fill(panel + p * NR + cols, panel + (p + 1) * NR, 0.0f);
      if (tid == n - 1) {
        for (int64_t j = 0; j < NR; ++j) panel[d * NR + j] = j < cols ? a.b[s * NR + j] : 0.0f;
      }
    }
    if (n > 1) reset_own(fwd_next, tid);
    barrier();
    const float* rp[MR];
    for (int64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
      const int64_t nb = std::min(kBlockRows, rows - r0), ng = ceil_div(nb, MR);
      if (n > 1) reset_own(bwd_next, tid);  // read after the next barrier
      auto loss_of_group = [&](int64_t g) {
        double loss = 0;
        for (int64_t i = g * MR; i < std::min(g * MR + MR, nb); ++i) {
          const float* t = a.t + (r0 + i) * o;
          for (int64_t s = 0; s < np; ++s) {
            float* z = gp + i * op + s * NR;
            const float* ts = t + s * NR;
            const int64_t cols = std::min(NR, o - s * NR);
#pragma omp simd reduction(+ : loss)
            for (int64_t j = 0; j < cols; ++j) {
              float gj;
              loss += static_cast<double>(tb::mse_element(z[j], ts[j], a.inv_count, &gj));
              z[j] = gj;
            }
            // The forward stores only the O columns; the backward's last output group
            // also reads a few past O (rows of [dW db] computed, never stored): keep them 0.
            std::fill(z + cols, z + NR, 0.0f);
          }
        }
        losses[(r0 + g * MR) / MR] = loss;
      };
      // Row groups [g0, g1) (MR rows each): their rows into Xb, z = Xb [W^T; b] (each
      // panel of W^T across all the run's groups: at O 256 W^T is 1 MiB, as much as L2),
      // then the loss and g in place of z (0 past O). Every sum in it has one order,
      // whichever thread runs it.
      auto forward_groups = [&](int64_t g0, int64_t g1) {
        for (int64_t i = g0 * MR; i < std::min(g1 * MR, nb); ++i) {
          float* row = xb + i * ldx;
          std::memcpy(row, a.x + (r0 + i) * d, sizeof(float) * static_cast<size_t>(d));
          row[d] = 1.0f;
          std::fill(row + d1, row + ldx, 0.0f);
        }
        for (int64_t k0 = 0; k0 < d1; k0 += kslice) {
          const int64_t kk = std::min(kslice, d1 - k0);
          for (int64_t s = 0; s < np; ++s) {
            for (int64_t g = g0; g < g1; ++g) {
              const int64_t i0 = g * MR, mr = std::min(MR, nb - i0);
              for (int64_t i = 0; i < MR; ++i) rp[i] = xb + (i0 + std::min(i, mr - 1)) * ldx + k0;
              run_tile<K, false>(kk, rp, nullptr, 0, wp + (s * d1 + k0) * NR, 1.0f, k0 == 0 ? 0.0f : 1.0f,
                                 gp + i0 * op + s * NR, op, mr, std::min(NR, o - s * NR));
            }
          }
        }
        for (int64_t g = g0; g < g1; ++g) loss_of_group(g);
      };
      // Runs of half a thread's share: W^T's panels are read once per run (run by run of
      // one group, O = 256 lost 8% at one thread: 1 MiB of W^T per 8 rows, from L3).
      share_runs(tid, n, ng, group_run(ng), fwd_next, forward_groups);
      barrier();  // the whole block's g before anyone reads it
      if (n > 1) reset_own(fwd_next, tid);  // for the next block's forward, after 2 barriers
      // This thread's share of the next block's rows (it copies them unless another
      // thread takes them first), asked into L2 a few lines per backward tile, so that
      // the copy reads L2, not memory: +8% at O = 128, one thread.
      const int64_t nb_next = std::clamp<int64_t>(rows - r0 - kBlockRows, 0, kBlockRows);
      const int64_t ng_next = ceil_div(nb_next, MR);
      int64_t g_lo = 0, g_hi = 0;
      if (ng_next > 0) own_share(tid, n, ng_next, group_run(ng_next), &g_lo, &g_hi);
      const int64_t next_lo = std::min(g_lo * MR, nb_next), next_hi = std::min(g_hi * MR, nb_next);
      const int64_t next_lines = (next_hi - next_lo) * d / 16;  // 16 floats a line
      const float* next = next_lines > 0 ? a.x + (r0 + kBlockRows + next_lo) * d : a.x;  // never past x's end
      // Backward: the tiles of [dW db], column panel j by panel (its B, Xb's rows x NR,
      // stays in L1 across the panel's O / MR output groups), in runs of kTileRun tiles
      // (whole tiles, not whole panels, so 16 threads share D 1024's 22 to 33 panels
      // evenly).
      const int64_t ng_o = ceil_div(o, MR), tiles = nj * ng_o;
      int64_t u_lo, u_hi;  // this thread's own tiles: the prefetch is spread over as many
      own_share(tid, n, tiles, kTileRun, &u_lo, &u_hi);
      const int64_t per_tile = ceil_div(next_lines, std::max<int64_t>(u_hi - u_lo, 1));
      int64_t line = 0;
      share_runs(tid, n, tiles, kTileRun, bwd_next, [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t j = u / ng_o, o0 = u % ng_o * MR;
          for (const int64_t e = std::min(line + per_tile, next_lines); line < e; ++line) {
            __builtin_prefetch(next + line * 16, 0, 2);
          }
          run_tile<K, true>(nb, nullptr, gp + o0, op, xb + j * NR, 1.0f, r0 == 0 ? 0.0f : 1.0f,
                            dwb + o0 * ldw + j * NR, ldw, std::min(MR, o - o0), std::min(NR, d1 - j * NR), ldx);
        }
      });
      barrier();  // before the next block overwrites Xb and g
    }
    for (int64_t i = 0; i < o; ++i) std::copy(dwb + i * ldw + p_lo, dwb + i * ldw + p_hi, a.dw + i * d + p_lo);
  };
  if (want == 1) {
    body(0, 1);
  } else {
#pragma omp parallel num_threads(want)
    body(omp_get_thread_num(), omp_get_num_threads());
  }
  for (int64_t i = 0; i < o; ++i) a.db[i] = dwb[i * ldw + d];
  double loss = 0;
  for (const double l : group_loss) loss += l;
  return loss;
}

}  // namespace

double linear_mse_step_blocked(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                               const float* b, float inv_count, float* dw, float* db) {
  detail::check_linear_step_shape("linear_mse_step_blocked", rows, d, o);
  if (rows == 0) {
    std::fill(dw, dw + o * d, 0.0f);
    std::fill(db, db + o, 0.0f);
    return 0.0;
  }
  const Args a{x, t, rows, d, o, w, b, inv_count, dw, db};
  const int want = rows * d * o >= kParallelMinMacs && !omp_in_parallel() ? std::max(1, omp_get_max_threads()) : 1;
  return with_kernel(gemm_config().kernel, [&](auto k) {
    gemm_detail::last_kernel_run = decltype(k)::kName;
    return blocked_step<decltype(k)>(a, want);
  });
}

}  // namespace tb::cpu
