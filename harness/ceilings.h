// harness/ceilings.h — the machine's own ceilings, measured at the start of a run and
// kept in env.json's "ceilings" object, so a report can say how close each row came to
// the hardware (reports/efficiency.py: roofline, % of the measured ceiling).
// CPU: one core's and all cores' FMA rate (kernels/cpu/ceiling_loops.h), STREAM-triad
// bandwidth on one core and on all of them over arrays much larger than the last-level
// cache. GPU (CUDA builds, where a GPU is usable; harness/ceilings_cuda.cpp): cuBLAS
// SGEMM and TF32 rates at a large square shape, device-to-device copy bandwidth.
// About 1 s in all on 2 cores; off with `--no-ceilings` or TB_CEILINGS=0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

struct CpuCeilings {
  double fma_gflops_1core = 0;  // 1e9 FLOP/s, one thread: best of the trials
  double fma_gflops_all = 0;    // every thread at once (threads below)
  double triad_gbs_1core = 0;   // 1e9 B/s, STREAM counting (3 x 4 bytes per element)
  double triad_gbs = 0;         // every thread at once
  int threads = 0;              // threads of the "all" measurements
  int64_t triad_array_bytes = 0;  // one of the three arrays
  std::string isa;              // the FMA loop's instruction set (ceiling_loops.h)
  double duration_s = 0;        // wall time of the CPU measurements
};

struct GpuCeiling {
  int index = 0;
  std::string name;
  double sgemm_gflops = -1;   // 1e9 FLOP/s, cuBLAS SGEMM (CUBLAS_DEFAULT_MATH), n x n x n
  double tf32_gflops = -1;    // the same GEMM with CUBLAS_TF32_TENSOR_OP_MATH
  double d2d_gbs = -1;        // 1e9 B/s, cudaMemcpyAsync device to device, read + write counted
  int64_t gemm_n = 0;         // the GEMM's side
  int64_t copy_bytes = 0;     // bytes of one copy
  double duration_s = 0;
  std::string error;          // non-empty: this GPU was not measured, and why
};

// Times the CPU loops on `threads` threads (and on one). Deterministic work, ~0.6 s.
CpuCeilings measure_cpu_ceilings(int threads);

// Every visible GPU's ceilings; empty with *why_none set where none can be measured
// (built without CUDA, no usable device).
std::vector<GpuCeiling> measure_gpu_ceilings(std::string* why_none);

// Why the ceilings are not measured in this process, or "" when they should be:
// `no_flag` (--no-ceilings given), TB_CEILINGS=0 in the environment, or a run with
// several ranks (they would share the cores; `trainbench suite` measures before it
// launches any). Throws UsageError for a TB_CEILINGS value other than 0 or 1.
std::string ceilings_off_reason(bool no_flag, bool multi_rank);

// env.json's "ceilings" object as JSON text: measured now (with units, method and
// duration), or {"omitted": reason} when `off_reason` is non-empty.
std::string ceilings_json(const std::string& off_reason, const std::string& host);

}  // namespace tb
