// kernels/cuda/check.h — error checks for CUDA runtime and cuBLAS calls.
// TB_*_CHECK throws tb::Error with file:line, the function, the call, the error
// string and the current device; TB_*_WARN only prints (for destructors and
// cleanup paths, which must not throw). TB_CUDA_CHECK_LAUNCH checks a kernel launch.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "kernels/error.h"

namespace tb::cuda {

inline std::string device_suffix() {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return " (device " + std::to_string(dev) + ")";
}

const char* cublas_status_string(cublasStatus_t s);

// Device out-of-memory helpers, inline as the check macros are: a program using the
// macros needs no library of ours.
namespace detail {
inline thread_local int64_t expected_device_bytes = 0;
}
// What the trainer on this thread expects to hold on its GPU (0: none running).
inline void set_expected_device_bytes(int64_t bytes) { detail::expected_device_bytes = bytes; }
// The one text of every device out-of-memory error: "out of device memory (needs ~X MiB,
// free Y MiB)". X: the larger of `needs_bytes` (0 for a library's own allocation, whose
// size it does not say) and what the trainer on this thread expects its GPU to hold
// (set_expected_device_bytes); Y: `free_bytes`, or where < 0 the current device's free
// memory now (cudaMemGetInfo). MiB rounded up / down.
inline std::string device_oom_text(int64_t needs_bytes, int64_t free_bytes = -1) {
  if (free_bytes < 0) {
    size_t f = 0, t = 0;
    if (cudaMemGetInfo(&f, &t) == cudaSuccess) free_bytes = static_cast<int64_t>(f);
    else cudaGetLastError();
  }
  const int64_t needs = std::max(needs_bytes, detail::expected_device_bytes);
  const int64_t mib = int64_t{1} << 20;
  return "out of device memory (needs ~" + (needs > 0 ? std::to_string((needs + mib - 1) / mib) : std::string("?")) +
         " MiB, free " + (free_bytes >= 0 ? std::to_string(free_bytes / mib) : std::string("?")) + " MiB)";
}
// Whether the last CUDA error of this thread is cudaErrorMemoryAllocation (then cleared):
// how an NCCL ncclUnhandledCudaError or ncclSystemError tells an out-of-memory apart.
inline bool last_cuda_error_was_oom() {
  if (cudaPeekAtLastError() != cudaErrorMemoryAllocation) return false;
  cudaGetLastError();
  return true;
}

// Whether GPU `device` has an image of this build's kernels: cudaFuncGetAttributes on an
// empty kernel compiled like all the others (cudaErrorNoKernelImageForDevice when the
// build has neither SASS for its architecture nor PTX it can JIT). Makes `device` current
// (and its context); clears the error it returns from CUDA's last-error state.
cudaError_t probe_kernel_image(int device);

}  // namespace tb::cuda

// An out-of-memory error (cudaErrorMemoryAllocation, CUBLAS_STATUS_ALLOC_FAILED) throws
// tb::DeviceOutOfMemory: device_oom_text, then where it happened.
#define TB_CUDA_CHECK(stmt)                                                                              \
  do {                                                                                                   \
    const cudaError_t tb_err_ = (stmt);                                                                  \
    if (tb_err_ != cudaSuccess) {                                                                        \
      const std::string tb_what_ = ::tb::error_where(__FILE__, __LINE__, __func__, #stmt) +              \
                                   cudaGetErrorString(tb_err_) + ::tb::cuda::device_suffix();            \
      if (tb_err_ == cudaErrorMemoryAllocation) {                                                        \
        cudaGetLastError();                                                                              \
        throw ::tb::DeviceOutOfMemory(::tb::cuda::device_oom_text(0) + ": " + tb_what_);                 \
      }                                                                                                  \
      throw ::tb::Error(tb_what_);                                                                       \
    }                                                                                                    \
  } while (0)

#define TB_CUDA_CHECK_LAUNCH() TB_CUDA_CHECK(cudaGetLastError())

#define TB_CUBLAS_CHECK(stmt)                                                                            \
  do {                                                                                                   \
    const cublasStatus_t tb_st_ = (stmt);                                                                \
    if (tb_st_ != CUBLAS_STATUS_SUCCESS) {                                                               \
      const std::string tb_what_ = ::tb::error_where(__FILE__, __LINE__, __func__, #stmt) +              \
                                   ::tb::cuda::cublas_status_string(tb_st_) + ::tb::cuda::device_suffix(); \
      if (tb_st_ == CUBLAS_STATUS_ALLOC_FAILED) {                                                        \
        throw ::tb::DeviceOutOfMemory(::tb::cuda::device_oom_text(0) + ": " + tb_what_);                 \
      }                                                                                                  \
      throw ::tb::Error(tb_what_);                                                                       \
    }                                                                                                    \
  } while (0)

#define TB_CUDA_WARN(stmt)                                                                               \
  do {                                                                                                   \
    const cudaError_t tb_err_ = (stmt);                                                                  \
    if (tb_err_ != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "trainbench: warning: %s:%d %s failed: %s\n", __FILE__, __LINE__, #stmt,       \
                   cudaGetErrorString(tb_err_));                                                         \
    }                                                                                                    \
  } while (0)
