// kernels/cpu/ceiling_loops.h — the two loops that measure this CPU's ceilings for
// the roofline (harness/ceilings.h times them): a register-blocked FMA loop (the
// compute ceiling) and STREAM's triad (the memory ceiling). Shapes: kFmaChains
// independent accumulators of kFmaLanes floats each; triad over n floats.
// Only the loops live here, so their results can be tested against a naive loop.
#pragma once

#include <cstdint>

namespace tb::cpu {

// Vector width of the FMA loop: the widest float FMA the compiler targets.
extern const int kFmaLanes;          // floats per vector (16 with AVX-512F, 8 with AVX2+FMA, 4 else)
constexpr int kFmaChains = 12;       // independent accumulators: hides FMA latency x issue ports
const char* fma_loop_isa();          // "avx512f", "avx2+fma", "neon" or "generic" (no fused FMA)

// Runs `iters` rounds of acc = acc * a + b (one fused multiply-add per lane) over
// kFmaChains * kFmaLanes accumulators; accumulator i starts at 1 + i / 1024. Writes
// the final accumulators to out[0 .. kFmaChains * kFmaLanes). FLOPs: 2 * iters *
// kFmaChains * kFmaLanes. Each lane equals the naive recurrence x = fmaf(x, a, b)
// bit for bit (except on the generic path, which may round twice).
void fma_loop(int64_t iters, float a, float b, float* out);

// a[i] = b[i] + s * c[i] for i in [0, n), on `threads` OpenMP threads with a static
// schedule (the same split first_touch() uses, so each thread reads pages it placed).
// Bytes moved, as STREAM counts them: 3 * 4 * n (two reads, one write).
void triad(float* a, const float* b, const float* c, float s, int64_t n, int threads);

// Writes `value` to x[0 .. n) with the static split triad() uses (pages land on the
// NUMA node of the thread that will use them).
void first_touch(float* x, float value, int64_t n, int threads);

}  // namespace tb::cpu
