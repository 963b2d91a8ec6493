// harness/ceilings_cuda.cpp — the GPU half of the measured ceilings (harness/ceilings.h),
// CUDA builds only: per visible GPU, cuBLAS SGEMM at n x n x n in plain fp32 and with
// TF32 tensor cores, and a device-to-device copy. Host C++ over the CUDA runtime and
// cuBLAS (as cuda_probe.cpp), timed with CUDA events. Each GPU's primary context is
// reset afterwards: the suite is long-lived and must not hold memory on every GPU
// (harness/host_info.h, FreeMemory). Errors become the GPU's "unavailable" reason.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/ceilings.h"
#include "harness/host_info.h"
#include "harness/timing.h"

namespace tb {
namespace {

constexpr int kTimedCalls = 5;   // per rate, after one untimed warm-up call
constexpr int64_t kMiB = int64_t{1} << 20;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}

// Owns what one GPU's measurement allocates, so an error on the way frees it.
struct Resources {
  std::vector<void*> buffers;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  cublasHandle_t blas = nullptr;
  ~Resources() {
    if (blas) cublasDestroy(blas);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
    for (void* p : buffers) cudaFree(p);
  }
  float* alloc(int64_t bytes) {
    void* p = nullptr;
    check(cudaMalloc(&p, size_t(bytes)), "cudaMalloc");
    buffers.push_back(p);
    return static_cast<float*>(p);
  }
};

// Milliseconds of the fastest of kTimedCalls calls of fn() (after one untimed call).
template <class Fn>
double best_ms(Resources& r, Fn fn) {
  fn();
  double best = 0;
  for (int i = 0; i < kTimedCalls; ++i) {
    check(cudaEventRecord(r.start, r.stream), "cudaEventRecord");
    fn();
    check(cudaEventRecord(r.stop, r.stream), "cudaEventRecord");
    check(cudaEventSynchronize(r.stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, r.start, r.stop), "cudaEventElapsedTime");
    if (ms > 0 && (best == 0 || ms < best)) best = ms;
  }
  if (best <= 0) throw std::runtime_error("CUDA events measured no time");
  return best;
}

void measure_one(GpuCeiling* g) {
  Stopwatch total;
  check(cudaSetDevice(g->index), "cudaSetDevice");
  size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  // Three n x n fp32 matrices in at most half the free memory; n = 8192 (1.1 TFLOP a call)
  // where it fits, smaller on small GPUs. The copy: 1 GiB, or a quarter of what is free.
  int64_t n = 8192;
  while (n > 1024 && 3 * n * n * 4 > int64_t(free_bytes) / 2) n /= 2;
  g->gemm_n = n;
  g->copy_bytes = std::min<int64_t>(1024 * kMiB, int64_t(free_bytes) / 4 / kMiB * kMiB);
  if (g->copy_bytes < 16 * kMiB) throw std::runtime_error("less than 64 MiB of device memory free");
  Resources r;
  float* a = r.alloc(n * n * 4);
  float* b = r.alloc(n * n * 4);
  float* c = r.alloc(n * n * 4);
  // Non-zero operands (zeros would flatter the power-limited clock): a 1 MiB pattern.
  std::vector<float> pattern(size_t(kMiB / 4));
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = float(int(i % 97) - 48) / 64.0f;
  for (float* m : {a, b}) {
    for (int64_t off = 0; off < n * n * 4; off += kMiB) {
      const int64_t bytes = std::min<int64_t>(kMiB, n * n * 4 - off);
      check(cudaMemcpy(reinterpret_cast<char*>(m) + off, pattern.data(), size_t(bytes), cudaMemcpyHostToDevice),
            "cudaMemcpy");
    }
  }
  check(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaEventCreate(&r.start), "cudaEventCreate");
  check(cudaEventCreate(&r.stop), "cudaEventCreate");
  check(cublasCreate(&r.blas), "cublasCreate");
  check(cublasSetStream(r.blas, r.stream), "cublasSetStream");
  const float one = 1.0f, zero = 0.0f;
  const int ni = int(n);
  const auto gemm = [&] {
    check(cublasSgemm(r.blas, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, a, ni, b, ni, &zero, c, ni), "cublasSgemm");
  };
  const double flop = 2.0 * double(n) * double(n) * double(n);
  check(cublasSetMathMode(r.blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  g->sgemm_gflops = flop / (best_ms(r, gemm) * 1e-3) / 1e9;
  check(cublasSetMathMode(r.blas, CUBLAS_TF32_TENSOR_OP_MATH), "cublasSetMathMode");
  g->tf32_gflops = flop / (best_ms(r, gemm) * 1e-3) / 1e9;
  // The copy reuses the GEMM buffers' memory where it fits, else its own two buffers.
  float* src = a;
  float* dst = b;
  if (g->copy_bytes > n * n * 4) {
    src = r.alloc(g->copy_bytes);
    dst = r.alloc(g->copy_bytes);
  } else {
    g->copy_bytes = std::min(g->copy_bytes, n * n * 4);
  }
  const auto copy = [&] {
    check(cudaMemcpyAsync(dst, src, size_t(g->copy_bytes), cudaMemcpyDeviceToDevice, r.stream), "cudaMemcpyAsync");
  };
  g->d2d_gbs = 2.0 * double(g->copy_bytes) / (best_ms(r, copy) * 1e-3) / 1e9;
  g->duration_s = total.seconds();
}

}  // namespace

std::vector<GpuCeiling> measure_gpu_ceilings(std::string* why_none) {
  const GpuInventory inv = gpu_inventory(FreeMemory::kNotRead);
  if (!inv.usable) {
    *why_none = inv.reason;
    return {};
  }
  std::vector<GpuCeiling> out;
  for (const GpuInfo& info : inv.gpus) {
    GpuCeiling g;
    g.index = info.index;
    g.name = info.name;
    try {
      measure_one(&g);
    } catch (const std::exception& e) {
      g.error = e.what();
    }
    // Release this GPU's primary context (and anything the error path left behind).
    cudaDeviceReset();
    out.push_back(g);
  }
  return out;
}

}  // namespace tb
