// kernels/cuda/check.cu — names and descriptions of cuBLAS status codes for the
// TB_CUBLAS_CHECK message (kernels/cuda/check.h), and the kernel-image probe: whether a
// GPU can run this build's kernels at all (an empty kernel asked about, not a table of
// compute capabilities).
// Every cublasStatus_t of cublas_api.h (CUDA 13) is listed; anything else (a newer
// header) falls back to cuBLAS's own cublasGetStatusString.
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda_arch.h"

#include <string>

namespace tb::cuda {

const char* cublas_status_string(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS (the operation completed successfully)";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED (the cuBLAS library was not initialized: no handle, "
             "or the CUDA runtime could not start)";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED (resource allocation failed inside cuBLAS)";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE (an unsupported value or parameter was passed: "
             "negative size, leading dimension too small, ...)";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH (the function needs a feature absent from the "
             "device architecture)";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR (an access to GPU memory space failed)";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED (the GPU program failed to execute)";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR (an internal cuBLAS operation failed)";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not supported)";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR (the functionality requested requires a license)";
  }
  return cublasGetStatusString(s);
}

// An empty kernel: what probe_kernel_image asks CUDA about (every .cu file of
// tb_kernels_cuda is compiled for the same CMAKE_CUDA_ARCHITECTURES).
static __global__ void kernel_image_probe_kernel() {}

cudaError_t probe_kernel_image(int device) {
  cudaError_t err = cudaSetDevice(device);
  if (err == cudaSuccess) {
    cudaFuncAttributes attr{};
    err = cudaFuncGetAttributes(&attr, kernel_image_probe_kernel);
  }
  if (err != cudaSuccess) cudaGetLastError();
  return err;
}

std::string unusable_device_reason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no usable CUDA device: ") + cudaGetErrorString(err);
  }
  if (count == 0) return "no usable CUDA device: cudaGetDeviceCount returned 0";
  const cudaError_t perr = probe_kernel_image(0);
  if (perr == cudaSuccess) return "";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) cudaGetLastError();
  if (perr == cudaErrorNoKernelImageForDevice || perr == cudaErrorInvalidDeviceFunction) {
    return "CUDA device 0 (" + std::string(prop.name) + "): " +
           no_kernel_image_message(prop.major, prop.minor, TB_CUDA_ARCHS);
  }
  return "CUDA device 0 (" + std::string(prop.name) + ") unusable: " + cudaGetErrorString(perr);
}

}  // namespace tb::cuda
