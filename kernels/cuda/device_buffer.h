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

// n elements of T on the current device, bound to the stream that uses them: uploads
// and downloads are cudaMemcpyAsync on that stream followed by a synchronisation of it,
// so they are ordered with the kernels queued there. (A legacy-stream cudaMemcpy does
// not wait for work on a non-blocking stream: an upload could overwrite data a kernel
// on it still reads, a download read results not yet written.)
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer(int64_t n, cudaStream_t stream) : n_(n), stream_(stream) {
    if (n > 0) TB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), static_cast<size_t>(n) * sizeof(T)));
  }
  DeviceBuffer(const std::vector<T>& host, cudaStream_t stream)
      : DeviceBuffer(static_cast<int64_t>(host.size()), stream) {
    upload(host);
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) TB_CUDA_WARN(cudaFree(ptr_));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return ptr_; }
  cudaStream_t stream() const { return stream_; }
  // host (n elements) -> device, after the stream's earlier work; returns once copied.
  void upload(const std::vector<T>& host) {
    if (n_ > 0) {
      TB_CUDA_CHECK(cudaMemcpyAsync(ptr_, host.data(), static_cast<size_t>(n_) * sizeof(T), cudaMemcpyHostToDevice,
                                    stream_));
      TB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
  }
  // device -> host, after the stream's earlier work (the kernels that wrote it).
  std::vector<T> download() const {
    std::vector<T> host(static_cast<size_t>(n_));
    if (n_ > 0) {
      TB_CUDA_CHECK(cudaMemcpyAsync(host.data(), ptr_, static_cast<size_t>(n_) * sizeof(T), cudaMemcpyDeviceToHost,
                                    stream_));
      TB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    return host;
  }

 private:
  int64_t n_ = 0;
  cudaStream_t stream_ = nullptr;
  T* ptr_ = nullptr;
};

}  // namespace tb::cuda
