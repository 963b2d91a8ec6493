// harness/backends/device_arena.h — DeviceArena: the device memory of a GPU trainer
// (cuda: one arena; cuda-dp: one per replica slot), allocated up front in typed
// blocks of `count` elements and counted for peak_device_mem_bytes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/error.h"

namespace tb {

// Device memory on one GPU; counts what it holds. DeviceArena() allocates and frees
// on whichever GPU is current (its owner keeps that one current); DeviceArena(device)
// makes `device` current for every allocation and before freeing, and names it in
// the out-of-memory message.
class DeviceArena {
 public:
  DeviceArena() = default;
  explicit DeviceArena(int device) : device_(device) {}
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;
  ~DeviceArena() {
    if (device_ != kCurrent) cudaSetDevice(device_);
    for (void* p : blocks_) TB_CUDA_WARN(cudaFree(p));
  }
  template <class T>
  T* alloc(int64_t count) {
    if (count <= 0) return nullptr;
    if (device_ != kCurrent) TB_CUDA_CHECK(cudaSetDevice(device_));
    void* p = nullptr;
    const size_t bytes = static_cast<size_t>(count) * sizeof(T);
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();
      const std::string on_gpu = device_ != kCurrent ? " on GPU " + std::to_string(device_) : "";
      throw DeviceOutOfMemory(cuda::device_oom_text(static_cast<int64_t>(bytes + held_)) + ": cudaMalloc of " +
                              std::to_string(bytes) + " bytes" + on_gpu);
    }
    blocks_.push_back(p);
    held_ += bytes;
    return static_cast<T*>(p);
  }
  int64_t held_bytes() const { return static_cast<int64_t>(held_); }

 private:
  static constexpr int kCurrent = -1;  // no device of its own: the current one
  int device_ = kCurrent;
  std::vector<void*> blocks_;
  size_t held_ = 0;
};

}  // namespace tb
