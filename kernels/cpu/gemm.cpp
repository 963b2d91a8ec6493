// kernels/cpu/gemm.cpp — float32 GEMM on the CPU: cache blocking, packing, a
// register-blocked micro-kernel (kernels/cpu/gemm_kernels.h, chosen at run time from
// the CPU's properties) and one OpenMP region per call whose threads share the packed
// operands. Row-major. M rows of C, N columns of C, K the reduction length;
// C (M x N) = alpha * op(A) (M x K) * op(B) (K x N) + beta * C.
// The slow twin is the naive triple loop in tests/kernels/test_gemm_cpu.cpp.
#include "kernels/cpu/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_props.h"
#include "kernels/cpu/gemm_kernels.h"
#include "kernels/cpu/team_work.h"

namespace tb::cpu {
namespace {

using gemm_detail::ceil_div;
using gemm_detail::kParallelMinMacs;
using gemm_detail::round_up;
using gemm_detail::with_kernel;

// Rows of op(A) packed or addressed at once per K slice: 4096 x kc floats of pointers
// and panels at most (6 MiB at kc = 384), shared by the team.
constexpr int64_t kPackRows = 4096;

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

// ---- buffers --------------------------------------------------------------------------
// 64-byte aligned so packed B rows are whole cache lines / zmm loads; grows only, so
// steady-state calls (same or smaller shapes) never allocate.
template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t{64}); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const { return true; }
};
template <class T>
T* scratch(std::vector<T, AlignedAllocator<T>>& buf, int64_t n) {
  if (buf.size() < static_cast<std::size_t>(n)) buf.resize(static_cast<std::size_t>(n));
  return buf.data();
}

// ---- the problem, as the driver sees it -------------------------------------------------
struct Problem {
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha, beta;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  float* c;
  int64_t ldc;
  // Row i of A (not transposed) / row p of B (not transposed).
  const float* a_row(int64_t i) const { return a + i * lda; }
  const float* b_row(int64_t p) const { return b + p * ldb; }
};

// ---- packing ------------------------------------------------------------------------------
// A (rows [i0, i0+mc) of op(A), K slice [p0, p0+kc)) as K::MR-row micro-panels. The kernel
// broadcasts single elements, so any layout works; we keep the ones that make packing
// a copy and skip packing where we can:
//  - A not transposed: each panel is MR row pointers into A itself:
//    MR short streams the kernel broadcasts from. Except when lda is a multiple of 1024
//    floats: rows 4 KiB apart all fall into one L1 set and evict each other and the B
//    panel, so such rows are copied into the pack buffer (row-major, kc apart) first.
//  - A transposed (K x M): column-major panels, op(A)(i, p) at p * MR + i, zero-padded.
template <class K>
void pack_a(const Problem& pr, bool copy_rows, int64_t i0, int64_t p0, int64_t mc, int64_t kc, int64_t panel_lo,
            int64_t panel_hi, float* ap, const float** arows) {
  constexpr int64_t MR = K::MR;
  for (int64_t q = panel_lo; q < panel_hi; ++q) {
    const int64_t ir = q * MR, rows = std::min(MR, mc - ir);
    float* panel = ap + q * MR * kc;
    if (pr.trans_a) {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = pr.a + (p0 + p) * pr.lda + i0 + ir;
        float* dst = panel + p * MR;
        for (int64_t i = 0; i < rows; ++i) dst[i] = src[i];
        for (int64_t i = rows; i < MR; ++i) dst[i] = 0.0f;
      }
      continue;
    }
    const float** ptr = arows + q * MR;
    for (int64_t i = 0; i < MR; ++i) {
      const float* src = pr.a_row(i0 + ir + std::min(i, rows - 1)) + p0;  // rows past mc repeat the last
      if (copy_rows) {
        std::copy(src, src + kc, panel + i * kc);
        ptr[i] = panel + i * kc;
      } else {
        ptr[i] = src;
      }
    }
  }
}

// B slice op(B)[p0, p0+kc) x [j0, j0+nc) as NR-wide micro-panels, each kc x NR contiguous
// (op(B)(p, j) at p * NR + j), zero-padded past nc: the kernel loads whole rows of NR
// as vectors. With trans_b (B stored N x K) this is a transpose. Packs panels
// [panel_lo, panel_hi) only: the team splits the slice between its threads.
template <class K>
void pack_b(const Problem& pr, int64_t p0, int64_t j0, int64_t kc, int64_t nc, int64_t panel_lo, int64_t panel_hi,
            float* __restrict bp) {
  constexpr int64_t NR = K::NR;
  for (int64_t q = panel_lo; q < panel_hi; ++q) {
    const int64_t jr = q * NR, cols = std::min(NR, nc - jr);
    float* panel = bp + q * kc * NR;
    if (pr.trans_b) {
      // Column j of op(B) is row j of B: the panel is a transpose of `cols` rows of B.
      gemm_detail::transpose<K>(pr.b + (j0 + jr) * pr.ldb + p0, pr.ldb, cols, kc, panel, NR);
      if (cols < NR) {
        for (int64_t p = 0; p < kc; ++p) std::fill(panel + p * NR + cols, panel + (p + 1) * NR, 0.0f);
      }
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = pr.b_row(p0 + p) + j0 + jr;
        float* dst = panel + p * NR;
        if (cols == NR) {
          for (int64_t j = 0; j < NR; ++j) dst[j] = src[j];  // fixed length: vector moves
        } else {
          for (int64_t j = 0; j < cols; ++j) dst[j] = src[j];
          for (int64_t j = cols; j < NR; ++j) dst[j] = 0.0f;
        }
      }
    }
  }
}

// The most rows (or columns) of C one thread gets when the panels of `width` covering
// `len` are split as Driver::body() splits them (own_share). Counted in rows and columns,
// not tiles: an edge panel is narrower than the rest (N 256 in 48-wide panels is 5 and
// 16 columns), and counting it as a whole tile had split such a B slice 144 : 112.
int64_t most_per_thread(int64_t width, int64_t len, int nt) {
  int64_t most = 0;
  for (int t = 0; t < nt; ++t) {
    int64_t lo, hi;
    own_share(t, nt, len, width, &lo, &hi);
    most = std::max(most, hi - lo);
  }
  return most;
}

// ---- the blocked driver ---------------------------------------------------------------------
// Loops (BLIS-like, A micro-panel in L1, B slice in L2):
//   for each chunk of up to kPackRows rows of C:
//     for each K slice pc (kc):           A panels of the chunk packed / addressed once
//       for each N slice jc (nc):         B slice packed once, into a buffer the team shares
//         for each tile (ir, jr):         micro-kernel, C tile updated in place
// The team splits each step's work: A panels and B panels are packed by the thread
// that owns them, then (barrier) every thread sweeps its tiles: its own rows of C or its
// own columns, whichever balances better (on a tie: see body()). Split by rows, a thread
// that finishes its own row panels takes the ones another thread has not started (a
// core slowed by a neighbour would otherwise keep the whole team waiting). Every C
// element's K sum runs in the same order (slices in order, p in order inside one),
// whatever the split or whoever computes the tile: any thread count gives
// bitwise-identical C.
// The first K slice applies the caller's beta; later slices accumulate (beta = 1).
template <class K>
class Driver {
 public:
  static constexpr int64_t MR = K::MR, NR = K::NR;

  Driver(const Problem& pr, int64_t kc, int64_t nc, int threads) : pr_(pr), kc_(kc), nc_(nc), threads_(threads) {
    thread_local std::vector<float, AlignedAllocator<float>> a_buf, b_buf;
    thread_local std::vector<const float*, AlignedAllocator<const float*>> ptr_buf;
    const int64_t chunk = std::min(pr.m, kPackRows);
    copy_a_ = !pr.trans_a && (pr.lda % 1024 == 0);
    const int64_t panels = ceil_div(chunk, MR);
    ap_ = scratch(a_buf, pr.trans_a || copy_a_ ? panels * MR * std::min(pr.k, kc_) : 1);
    arows_ = scratch(ptr_buf, pr.trans_a ? 1 : panels * MR);
    bp_ = scratch(b_buf, round_up(std::min(pr.n, nc_), NR) * std::min(pr.k, kc_));
    if (threads_ > 1) next_ = work_counters(threads_);
  }

  void run() {
    if (threads_ <= 1) {
      body(0, 1);
      return;
    }
#pragma omp parallel num_threads(threads_)
    body(omp_get_thread_num(), omp_get_num_threads());
  }

 private:
  static void barrier(int nt) {
    if (nt > 1) {
#pragma omp barrier
    }
  }

  void body(int tid, int nt) {
    const Problem& pr = pr_;
    for (int64_t is = 0; is < pr.m; is += kPackRows) {
      const int64_t ms = std::min(kPackRows, pr.m - is);
      const int64_t mp = ceil_div(ms, MR);
      for (int64_t pc = 0; pc < pr.k; pc += kc_) {
        const int64_t kc = std::min(kc_, pr.k - pc);
        const float beta = pc == 0 ? pr.beta : 1.0f;
        for (int64_t jc = 0; jc < pr.n; jc += nc_) {
          const int64_t nc = std::min(nc_, pr.n - jc);
          const int64_t np = ceil_div(nc, NR);
          // Split the tiles by rows or by columns of C (gemm_split_by_rows, gemm.h).
          const bool by_rows = gemm_split_by_rows(ms, nc, MR, NR, nt, cols_on_tie(kc, nc));
          const int64_t n_lo = by_rows ? 0 : np * tid / nt, n_hi = by_rows ? np : np * (tid + 1) / nt;
          if (jc == 0) {  // this thread's share of the A panels, once per K slice
            const int64_t a_lo = mp * tid / nt, a_hi = mp * (tid + 1) / nt;
            pack_a<K>(pr, copy_a_, is, pc, ms, kc, a_lo, a_hi, ap_, arows_);  // by rows: its own row panels
          }
          pack_b<K>(pr, pc, jc, kc, nc, np * tid / nt, np * (tid + 1) / nt, bp_);
          if (nt > 1) reset_own(next_, tid);  // read after this barrier, by then done with the last slice's
          barrier(nt);  // every panel packed before anyone reads it
          auto row_panel = [&](int64_t q) {
            const int64_t ir = q * MR, mr = std::min(MR, ms - ir);
            float* c_row = pr.c + (is + ir) * pr.ldc + jc;
            const float* const* rows = pr.trans_a ? nullptr : arows_ + q * MR;
            const float* panel = pr.trans_a ? ap_ + q * MR * kc : nullptr;
            for (int64_t s = n_lo; s < n_hi; ++s) {
              const int64_t jr = s * NR;
              tile(kc, rows, panel, bp_ + s * kc * NR, beta, c_row + jr, mr, std::min(NR, nc - jr));
            }
          };
          if (by_rows) {  // its own row panels (own_share) first, then those not yet started
            share_runs(tid, nt, mp, 1, next_, [&](int64_t q0, int64_t q1) {
              for (int64_t q = q0; q < q1; ++q) row_panel(q);
            });
          } else {
            for (int64_t q = 0; q < mp; ++q) row_panel(q);  // by columns: every row panel, its own columns
          }
          barrier(nt);  // before the next slice's packing overwrites the panels
        }
      }
    }
  }

  // One micro-tile through the kernel variant that computes no more than it must.
  void tile(int64_t kc, const float* const* rows, const float* panel, const float* bpanel, float beta, float* c,
            int64_t mr, int64_t nr) const {
    using gemm_detail::run_tile;
    if (pr_.trans_a) run_tile<K, true>(kc, nullptr, panel, MR, bpanel, pr_.alpha, beta, c, pr_.ldc, mr, nr);
    else run_tile<K, false>(kc, rows, nullptr, 0, bpanel, pr_.alpha, beta, c, pr_.ldc, mr, nr);
  }

  bool cols_on_tie(int64_t kc, int64_t nc) const {
    constexpr int64_t kDeepSliceBytes = 64 << 10;
    return !pr_.trans_a && !copy_a_ && kc * nc * static_cast<int64_t>(sizeof(float)) >= kDeepSliceBytes;
  }

  const Problem& pr_;
  WorkCounter* next_ = nullptr;  // by rows: the next of each thread's row panels (share_runs)
  int64_t kc_, nc_;
  int threads_;
  bool copy_a_ = false;
  float* ap_ = nullptr;
  const float** arows_ = nullptr;
  float* bp_ = nullptr;
};

// ---- kernel choice and blocking ----------------------------------------------------------
std::vector<std::string> supported() {
  std::vector<std::string> s;
#if defined(TB_GEMM_X86)
  if (cpu_props().avx512) {
    s.push_back("avx512");
    s.push_back("avx512-8x48");
  }
  if (cpu_props().avx2_fma) s.push_back("avx2");
#endif
  s.push_back("portable");
  return s;
}

// The tile recorded (mr x nr) is the kernel's own, through the dispatch gemm() uses.
GemmConfig make_choice(const std::string& name, const std::string& why) {
  const CpuProps& p = cpu_props();
  GemmConfig g;
  g.kernel = name;
  with_kernel(name, [&g](auto k) { g.mr = decltype(k)::MR, g.nr = decltype(k)::NR; });
  if (name == "avx2") {
    g.vector_unit = "AVX2 + FMA, 256-bit";
  } else if (name == "portable") {
    g.vector_unit = "compiler-vectorised loops for the build's target";
  } else {
    g.vector_unit = p.avx512_double_pumped ? "AVX-512 on a 256-bit datapath (each zmm op as two halves)"
                                           : "AVX-512, 512-bit datapath";
  }
  gemm_blocking(p.l1d_bytes, p.l2_bytes, g.mr, g.nr, &g.kc, &g.nc);
  g.chosen_by = why;
  return g;
}

std::string cpu_facts() {
  const CpuProps& p = cpu_props();
  char family[16];
  std::snprintf(family, sizeof family, "0x%x", p.family);
  return "CPUID " + (p.vendor.empty() ? std::string("n/a") : p.vendor) + " family " + family +
         (p.avx512 ? ", AVX-512 F/DQ/VL" : "") + (p.avx2_fma ? ", AVX2+FMA" : "") + (p.amx ? ", AMX (unused: fp32)" : "") +
         "; L1d " + std::to_string(p.l1d_bytes >> 10) + " KiB, L2 " + std::to_string(p.l2_bytes >> 10) +
         " KiB (" + p.cache_source + ")";
}

// Throws std::invalid_argument naming `what` and this CPU's kernels unless `name` is one.
void require_supported(const std::string& name, const std::string& what) {
  const std::vector<std::string> ok = supported();
  if (std::find(ok.begin(), ok.end(), name) != ok.end()) return;
  std::string list;
  for (const std::string& s : ok) list += (list.empty() ? "" : ", ") + s;
  throw std::invalid_argument(what + ": allowed values on this CPU: " + list);
}

GemmConfig automatic() {
  if (const char* env = std::getenv("TB_CPU_GEMM_KERNEL"); env != nullptr && *env != '\0') {
    const std::string what = std::string("TB_CPU_GEMM_KERNEL=") + env;
    require_supported(env, what);
    return make_choice(env, what + "; " + cpu_facts());
  }
  // The widest kernel the CPU runs. Double-pumped AVX-512 (Zen 4) reaches the same FMA
  // rate as AVX2 there, with half the instructions and a 4x larger register tile per
  // load, so it keeps the AVX-512 kernel (as OpenBLAS does); its smaller L1d gives it
  // a smaller kc through the blocking rule. On an Intel core the AVX-512 tile is 8 x 48:
  // it needs 11 zmm loads per 24 FMAs where 12 x 32 needs 14, and an Ice Lake-SP core
  // loads zmm at about 1.25 a cycle. There (2 threads, alternating rounds, one binary
  // switched by TB_CPU_GEMM_KERNEL) the large MLP trained at a median 906 samples/s
  // against 815 (+3 to +19% per round, 4 rounds); the small MLP -2 to +14% at one thread,
  // -1 to +5% at two; the blocked linear step +16% at O = 96, 0 to 2% at 128 and 256;
  // the large MLP's GEMMs alone against OpenBLAS's 101.8% against 100.3% (medians of 10
  // and 9 runs of tb_gemm_vs_blas, within their spread). AMD cores (Zen 5: 12 x 32 tuned
  // there, unmeasured with 8 x 48) keep 12 x 32. Other Intel cores (Skylake-SP, Sapphire
  // Rapids) take 8 x 48 by the same reasoning, unmeasured: TB_CPU_GEMM_KERNEL compares.
  const CpuProps& p = cpu_props();
  if (p.avx512 && p.vendor == "GenuineIntel") return make_choice("avx512-8x48", cpu_facts());
  return make_choice(supported().front(), cpu_facts());
}

GemmConfig& current() {
  static GemmConfig choice = automatic();
  return choice;
}

template <class K>
void run_blocked(const Problem& pr, const GemmConfig& g) {
  gemm_detail::last_kernel_run = K::kName;
  const int threads = (omp_in_parallel() || pr.m * pr.n * pr.k < kParallelMinMacs) ? 1 : omp_get_max_threads();
  Driver<K>(pr, g.kc, g.nc, threads).run();
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
// Padding a single row or column to a micro-tile would waste MR or NR times the work,
// so two vector shapes get a direct loop instead.

// N == 1, A not transposed: C[i] = alpha * dot(A[i, :], w) + beta * C[i], where w is
// op(B)'s only column: contiguous (w_stride 1) when trans_b, else strided by ldb.
// The forward pass y = X w^T of a 1-output layer.
void gemm_col_vector(const Problem& pr, const float* w, int64_t w_stride) {
  const Problem p = pr;
  parallel_for(p.m, p.m * p.k >= kParallelMinMacs, [&p, w, w_stride](int64_t i) {
    const float* a_row = p.a_row(i);
    float sum = 0.0f;
    if (w_stride == 1) {  // separate loop: a unit stride the compiler can see vectorises well
#pragma omp simd reduction(+ : sum)
      for (int64_t q = 0; q < p.k; ++q) sum += a_row[q] * w[q];
    } else {
      for (int64_t q = 0; q < p.k; ++q) sum += a_row[q] * w[q * w_stride];
    }
    float& out = p.c[i * p.ldc];
    out = p.beta == 0.0f ? p.alpha * sum : p.alpha * sum + p.beta * out;
  });
}

// M == 1, B not transposed: C[0, :] = alpha * sum_p x_p * B[p, :] + beta * C[0, :], x
// being op(A)'s only row (contiguous, or strided by lda when trans_a). Streams B's rows
// once; columns are split into chunks that are summed in registers/L1 and can run in
// parallel. The weight gradient dW = dy^T X of a 1-output layer.
void gemm_row_vector(const Problem& pr, const float* x, int64_t x_stride) {
  static constexpr int64_t kChunk = 256;
  const Problem p = pr;
  parallel_for(ceil_div(p.n, kChunk), p.n * p.k >= kParallelMinMacs, [&p, x, x_stride](int64_t chunk) {
    const int64_t j0 = chunk * kChunk;
    const int64_t w = std::min(kChunk, p.n - j0);
    float acc[kChunk] = {};
    for (int64_t q = 0; q < p.k; ++q) {
      const float x_q = x[q * x_stride];
      const float* b_row = p.b_row(q) + j0;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) acc[j] += x_q * b_row[j];
    }
    for (int64_t j = 0; j < w; ++j)
      p.c[j0 + j] = p.beta == 0.0f ? p.alpha * acc[j] : p.alpha * acc[j] + p.beta * p.c[j0 + j];
  });
}

void check_ld(const char* name, int64_t ld, int64_t row_len) {
  if (ld < std::max<int64_t>(row_len, 1))
    throw std::invalid_argument(std::string("tb::cpu::gemm: ") + name + " = " + std::to_string(ld) +
                                " is smaller than the row length " + std::to_string(row_len));
}

}  // namespace

void gemm_blocking(int64_t l1d_bytes, int64_t l2_bytes, int64_t mr, int64_t nr, int64_t* kc, int64_t* nc) {
  const int64_t l1 = l1d_bytes > 0 ? l1d_bytes : 32 << 10, l2 = l2_bytes > 0 ? l2_bytes : 1 << 20;
  const int64_t f = static_cast<int64_t>(sizeof(float));
  *kc = std::clamp<int64_t>(l1 / 2 / (mr * f) / 16 * 16, 128, 1024);
  *nc = std::clamp<int64_t>(l2 / (*kc * f) / nr * nr, 4 * nr, 4096);
}

const GemmConfig& gemm_config() { return current(); }

bool gemm_split_by_rows(int64_t ms, int64_t nc, int64_t mr, int64_t nr, int nt, bool cols_on_tie) {
  const int64_t rows_load = most_per_thread(mr, ms, nt) * nc;
  const int64_t cols_load = ms * most_per_thread(nr, nc, nt);
  // One row panel's or one column panel's worth, and at most 1/32 of the lighter load: where
  // a thread gets one panel or less, a panel is the whole difference between the splits.
  const int64_t slack = std::min({mr * nc, ms * nr, std::min(rows_load, cols_load) / 32});
  if (rows_load + slack < cols_load) return true;
  if (cols_load + slack < rows_load) return false;
  return !cols_on_tie;
}

const char* gemm_kernel_last_run() { return gemm_detail::last_kernel_run; }

std::vector<std::string> gemm_kernels_supported() { return supported(); }

void set_gemm_kernel(const std::string& name) {
  if (name.empty()) {
    current() = automatic();
    return;
  }
  require_supported(name, "tb::cpu::set_gemm_kernel(\"" + name + "\")");
  current() = make_choice(name, "set_gemm_kernel(\"" + name + "\"); " + cpu_facts());
}

std::string gemm_implementation() {
  const GemmConfig& g = gemm_config();
  return "tb::cpu::gemm: own blocked GEMM, " + g.kernel + " " + std::to_string(g.mr) + "x" + std::to_string(g.nr) +
         " micro-kernel, kc " + std::to_string(g.kc) + ", nc " + std::to_string(g.nc) +
         ", packed B shared by the OpenMP team; no BLAS";
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m < 0 || n < 0 || k < 0)
    throw std::invalid_argument("tb::cpu::gemm: negative dimension m=" + std::to_string(m) + " n=" +
                                std::to_string(n) + " k=" + std::to_string(k));
  if (m == 0 || n == 0) return;
  check_ld("ldc", ldc, n);
  if (k == 0 || alpha == 0.0f) {  // BLAS semantics: A and B are not read
    scale_c(m, n, beta, c, ldc);
    return;
  }
  check_ld("lda", lda, trans_a ? m : k);
  check_ld("ldb", ldb, trans_b ? k : n);
  const Problem pr{trans_a, trans_b, m, n, k, alpha, beta, a, lda, b, ldb, c, ldc};

  if (n == 1 && !trans_a) {
    gemm_col_vector(pr, b, trans_b ? 1 : ldb);
    return;
  }
  if (m == 1 && !trans_b) {
    gemm_row_vector(pr, a, trans_a ? lda : 1);
    return;
  }
  const GemmConfig& g = current();
  with_kernel(g.kernel, [&](auto k) { run_blocked<decltype(k)>(pr, g); });
}

}  // namespace tb::cpu
