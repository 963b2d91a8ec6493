// harness/ceilings.cpp — times the ceiling loops (kernels/cpu/ceiling_loops.h) and
// assembles env.json's "ceilings" object (harness/ceilings.h). Best of a few short
// trials: a ceiling is what the machine can do, so a trial slowed by another process
// must not lower it; the report says "ceiling under-measured" when a row beats it.
#include "harness/ceilings.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "harness/cli.h"
#include "harness/host_info.h"
#include "harness/host_topology.h"
#include "harness/json_out.h"
#include "harness/timing.h"
#include "kernels/cpu/ceiling_loops.h"

namespace tb {
namespace {

using cpu::first_touch;
using cpu::fma_loop;
using cpu::fma_loop_isa;
using cpu::kFmaChains;
using cpu::kFmaLanes;
using cpu::triad;

constexpr double kTrialSeconds = 0.04;  // one timed trial of the FMA loop
constexpr int kFmaTrials = 5;  // of each: 1 thread, all threads
constexpr int kTriadTrials = 4;
constexpr float kFmaA = 0.99951171875f, kFmaB = 0.0009765625f;  // values stay near 1..2: no denormals
constexpr int64_t kMiB = int64_t{1} << 20;

double fma_flops(int64_t iters) { return 2.0 * double(iters) * kFmaChains * kFmaLanes; }

// FMA rate (FLOP/s) of one trial, each of `threads` threads running `iters` rounds at once.
double fma_trial(int threads, int64_t iters, std::vector<float>& out) {
  Stopwatch sw;
  if (threads == 1) {
    fma_loop(iters, kFmaA, kFmaB, out.data());
  } else {
#pragma omp parallel num_threads(threads)
    fma_loop(iters, kFmaA, kFmaB, out.data() + size_t(omp_get_thread_num()) * kFmaChains * kFmaLanes);
  }
  return threads * fma_flops(iters) / sw.seconds();
}

// Best FMA rates (FLOP/s) on 1 thread (*one) and on `threads` (*all, 0 when threads is 1)
// over kFmaTrials each, the two kinds alternating so that both sample the same second:
// on a VM the second core's speed moves within it (docs/performance.md, fifteenth
// session: 2 threads did 1.48-2.25x one thread's work from one 20 ms window to the next,
// and one run's three back-to-back all-thread trials read 1.18x). An untimed all-thread
// trial first wakes the team (a halted vCPU took milliseconds to start there).
void time_fma(int threads, int64_t iters, double* one, double* all) {
  std::vector<float> out(static_cast<size_t>(threads) * kFmaChains * kFmaLanes);
  *one = *all = 0;
  if (threads > 1) fma_trial(threads, std::max<int64_t>(1, iters / 8), out);
  for (int t = 0; t < kFmaTrials; ++t) {
    *one = std::max(*one, fma_trial(1, iters, out));
    if (threads > 1) *all = std::max(*all, fma_trial(threads, iters, out));
  }
}

// Rounds of the FMA loop that take about kTrialSeconds on one thread.
int64_t calibrate_fma() {
  std::vector<float> out(size_t(kFmaChains) * kFmaLanes);
  int64_t iters = 1 << 12;
  for (;;) {
    Stopwatch sw;
    fma_loop(iters, kFmaA, kFmaB, out.data());
    const double s = sw.seconds();
    if (s > 0.004 || iters > (int64_t{1} << 40)) return std::max<int64_t>(1, int64_t(double(iters) * kTrialSeconds / s));
    iters *= 4;
  }
}

// One array's bytes: twice the last-level cache (all instances), so the three arrays
// are six times it; 16..256 MiB, and at most 1/16 of the host's memory.
int64_t triad_array_bytes() {
  int64_t llc = 0;
  const HostTopology t = host_topology();
  int level = 0;
  for (const CacheLevel& c : t.caches) {
    if (c.type == "instruction" || c.level < level) continue;
    level = c.level;
    llc = c.size_bytes * std::max(1, c.instances);
  }
  if (llc <= 0) llc = 32 * kMiB;  // unknown: a large server L3
  int64_t bytes = std::clamp<int64_t>(2 * llc, 16 * kMiB, 256 * kMiB);
  const int64_t mem = host_info().memory_bytes;
  if (mem > 0) bytes = std::min(bytes, std::max<int64_t>(kMiB, mem / 16));
  return bytes / 64 * 64;
}

struct FreeDelete {
  void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using FloatBuffer = std::unique_ptr<float[], FreeDelete>;
FloatBuffer alloc_floats(int64_t n) {
  return FloatBuffer(static_cast<float*>(::operator new[](size_t(n) * sizeof(float), std::align_val_t{64})));
}

// Best triad bandwidth (B/s) over kTriadTrials on `threads` threads.
double time_triad(float* a, const float* b, const float* c, int64_t n, int threads) {
  triad(a, b, c, 3.0f, n, threads);  // untimed: the threads' caches and TLBs warm
  double best = 0;
  for (int t = 0; t < kTriadTrials; ++t) {
    Stopwatch sw;
    triad(a, b, c, 3.0f, n, threads);
    best = std::max(best, 3.0 * 4.0 * double(n) / sw.seconds());
  }
  return best;
}

}  // namespace

CpuCeilings measure_cpu_ceilings(int threads) {
  Stopwatch total;
  CpuCeilings r;
  r.threads = std::max(1, threads);
  r.isa = fma_loop_isa();
  const int64_t iters = calibrate_fma();
  double one = 0, all = 0;
  time_fma(r.threads, iters, &one, &all);
  r.fma_gflops_1core = one / 1e9;
  // All threads can do at least what one does (the others idle): a trial in which another
  // process held a core must not make the all-thread ceiling lower than the one-thread one.
  r.fma_gflops_all = std::max(r.fma_gflops_1core, all / 1e9);
  r.triad_array_bytes = triad_array_bytes();
  const int64_t n = r.triad_array_bytes / int64_t{sizeof(float)};
  FloatBuffer a = alloc_floats(n), b = alloc_floats(n), c = alloc_floats(n);
  first_touch(a.get(), 0.0f, n, r.threads);
  first_touch(b.get(), 1.0f, n, r.threads);
  first_touch(c.get(), 2.0f, n, r.threads);
  r.triad_gbs_1core = time_triad(a.get(), b.get(), c.get(), n, 1) / 1e9;
  r.triad_gbs = std::max(r.triad_gbs_1core,
                         r.threads == 1 ? 0.0 : time_triad(a.get(), b.get(), c.get(), n, r.threads) / 1e9);
  r.duration_s = total.seconds();
  return r;
}

#if !defined(TB_HAVE_CUDA)
std::vector<GpuCeiling> measure_gpu_ceilings(std::string* why_none) {
  *why_none = "built without CUDA";
  return {};
}
#endif

std::string ceilings_off_reason(bool no_flag, bool multi_rank) {
  if (no_flag) return "--no-ceilings";
  if (const char* v = std::getenv("TB_CEILINGS"); v && *v) {
    const std::string s = v;
    if (s == "0") return "TB_CEILINGS=0";
    if (s != "1") throw UsageError("TB_CEILINGS: '" + s + "' is not allowed (allowed: 0 to skip the ceilings, 1)");
  }
  if (multi_rank) {
    return "not measured inside a multi-process run (its ranks would share the cores); "
           "`trainbench suite` measures before it launches ranks";
  }
  return "";
}

std::string ceilings_json(const std::string& off_reason, const std::string& host) {
  Json j;
  if (!off_reason.empty()) {
    j["omitted"] = off_reason;
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  const CpuCeilings c = measure_cpu_ceilings(hardware_threads());
  std::string why_none;
  const std::vector<GpuCeiling> gpus = measure_gpu_ceilings(&why_none);
  j["host"] = host;
  j["units"] = {{"fma_gflops_1core", "GFLOP/s (1e9 FLOP/s)"}, {"fma_gflops_all", "GFLOP/s (1e9 FLOP/s)"},
                {"triad_gbs_1core", "GB/s (1e9 B/s)"},       {"triad_gbs", "GB/s (1e9 B/s)"},
                {"sgemm_gflops", "GFLOP/s (1e9 FLOP/s)"},    {"tf32_gflops", "GFLOP/s (1e9 FLOP/s)"},
                {"d2d_gbs", "GB/s (1e9 B/s)"},              {"triad_array_bytes", "bytes"},
                {"copy_bytes", "bytes"},                     {"duration_s", "s"}};
  j["cpu"] = {{"fma_gflops_1core", c.fma_gflops_1core},
              {"fma_gflops_all", c.fma_gflops_all},
              {"triad_gbs_1core", c.triad_gbs_1core},
              {"triad_gbs", c.triad_gbs},
              {"threads", c.threads},
              {"triad_array_bytes", c.triad_array_bytes},
              {"isa", c.isa},
              {"method", "FMA: " + std::to_string(kFmaChains) + " independent " + c.isa + " FMA chains of " +
                             std::to_string(kFmaLanes) + " floats per thread (kernels/cpu/ceiling_loops.cpp), 2 FLOP "
                             "per lane per FMA, best of " + std::to_string(kFmaTrials) + " trials of ~" +
                             std::to_string(int(kTrialSeconds * 1000)) + " ms, 1-thread and all-thread trials "
                             "alternating; triad: a = b + 3c over three arrays "
                             "of triad_array_bytes (6x the last-level cache), 12 bytes per element (STREAM "
                             "counting, no write-allocate), best of " + std::to_string(kTriadTrials) +
                             "; an all-thread figure below the one-thread figure (a disturbed trial) is "
                             "raised to it"},
              {"duration_s", c.duration_s}};
  Json g = Json::array();
  for (const GpuCeiling& d : gpus) {
    Json e = {{"index", d.index}, {"name", d.name}};
    if (!d.error.empty()) {
      e["unavailable"] = d.error;
    } else {
      e["sgemm_gflops"] = d.sgemm_gflops;
      e["tf32_gflops"] = d.tf32_gflops;
      e["d2d_gbs"] = d.d2d_gbs;
      e["gemm_n"] = d.gemm_n;
      e["copy_bytes"] = d.copy_bytes;
      e["method"] = "cuBLAS cublasSgemm n x n x n (2 n^3 FLOP) with CUBLAS_DEFAULT_MATH, then with "
                    "CUBLAS_TF32_TENSOR_OP_MATH; cudaMemcpyAsync device to device of copy_bytes, 2 x copy_bytes "
                    "moved (read + write); CUDA events, best of the timed calls after a warm-up";
      e["duration_s"] = d.duration_s;
    }
    g.push_back(e);
  }
  j["gpus"] = g;
  j["gpu_reason"] = why_none.empty() ? Json(nullptr) : Json(why_none);
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace tb
