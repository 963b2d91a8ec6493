// bench/micro/bench_rates.h — the micro-benchmarks' rates as Google Benchmark counters
// in their idiomatic form: a per-call amount, kIsIterationInvariantRate (times the
// iterations, over the benchmark's time: real or manual where it says so) and kIs1000,
// so the console shows SI prefixes ("236G/s" under the column "FLOP/s") and the JSON
// holds plain FLOP/s and B/s.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>

namespace tb::bench {

// "FLOP/s": floating-point operations per call (a GEMM: 2 M N K).
inline void set_flop_rate(benchmark::State& state, double flop_per_call) {
  state.counters["FLOP/s"] =
      benchmark::Counter(flop_per_call, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// "B/s": bytes read plus bytes written per call.
inline void set_byte_rate(benchmark::State& state, int64_t bytes_per_call) {
  state.counters["B/s"] = benchmark::Counter(static_cast<double>(bytes_per_call),
                                             benchmark::Counter::kIsIterationInvariantRate,
                                             benchmark::Counter::kIs1000);
}

}  // namespace tb::bench
