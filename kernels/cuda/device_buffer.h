// kernels/cuda/device_buffer.h — an owning device array for tests and
// micro-benchmarks (the trainer keeps its memory in one arena instead), and the
// check that a device can run these kernels at all.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/check.h"

namespace tb::cuda {

// Why no device can run the kernels (empty when device 0 can): no device, a
// driver/runtime problem, or no kernel image of this build for GPU 0 (probe_kernel_image).
std::string unusable_device_reason();

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(int64_t n) : n_(n) {
    if (n > 0) TB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), static_cast<size_t>(n) * sizeof(T)));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(static_cast<int64_t>(host.size())) { upload(host); }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) TB_CUDA_WARN(cudaFree(ptr_));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return ptr_; }
  void upload(const std::vector<T>& host) {
    if (n_ > 0) {
      TB_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), static_cast<size_t>(n_) * sizeof(T), cudaMemcpyHostToDevice));
    }
  }
  std::vector<T> download() const {
    std::vector<T> host(static_cast<size_t>(n_));
    if (n_ > 0) {
      TB_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, static_cast<size_t>(n_) * sizeof(T), cudaMemcpyDeviceToHost));
    }
    return host;
  }

 private:
  int64_t n_ = 0;
  T* ptr_ = nullptr;
};

}  // namespace tb::cuda
