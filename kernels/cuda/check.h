// kernels/cuda/check.h — error checks for CUDA runtime and cuBLAS calls.
// TB_*_CHECK throws tb::Error with file:line, the function, the call, the error
// string and the current device; TB_*_WARN only prints (for destructors and
// cleanup paths, which must not throw). TB_CUDA_CHECK_LAUNCH checks a kernel launch.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

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

// Whether GPU `device` has an image of this build's kernels: cudaFuncGetAttributes on an
// empty kernel compiled like all the others (cudaErrorNoKernelImageForDevice when the
// build has neither SASS for its architecture nor PTX it can JIT). Makes `device` current
// (and its context); clears the error it returns from CUDA's last-error state.
cudaError_t probe_kernel_image(int device);

}  // namespace tb::cuda

#define TB_CUDA_CHECK(stmt)                                                                              \
  do {                                                                                                   \
    const cudaError_t tb_err_ = (stmt);                                                                  \
    if (tb_err_ != cudaSuccess) {                                                                        \
      throw ::tb::Error(::tb::error_where(__FILE__, __LINE__, __func__, #stmt) + cudaGetErrorString(tb_err_) + \
                        ::tb::cuda::device_suffix());                                                    \
    }                                                                                                    \
  } while (0)

#define TB_CUDA_CHECK_LAUNCH() TB_CUDA_CHECK(cudaGetLastError())

#define TB_CUBLAS_CHECK(stmt)                                                                            \
  do {                                                                                                   \
    const cublasStatus_t tb_st_ = (stmt);                                                                \
    if (tb_st_ != CUBLAS_STATUS_SUCCESS) {                                                               \
      throw ::tb::Error(::tb::error_where(__FILE__, __LINE__, __func__, #stmt) +                         \
                        ::tb::cuda::cublas_status_string(tb_st_) + ::tb::cuda::device_suffix());         \
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
