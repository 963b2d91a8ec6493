// harness/trace_mark.h — a named point of the run in the call trace of the fake CUDA
// runtime (tests/cuda_trace), so the trace tests can see where the runner's stopwatch
// starts and stops. The shim defines `extern "C" void tb_trace_mark(const char*)`;
// without it preloaded (every real run) trace_mark is one test of a null pointer.
#pragma once

namespace tb {

// Marks that the trace tests look for: bracketing each timed epoch, from outside.
inline constexpr const char* kMarkTimedBegin = "timed-epoch-begin";
inline constexpr const char* kMarkTimedEnd = "timed-epoch-end";

void trace_mark(const char* what);

}  // namespace tb
