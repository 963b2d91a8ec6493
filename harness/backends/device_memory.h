// harness/backends/device_memory.h — DeviceMemoryMeter: the device memory a GPU trainer
// holds beyond its arena — cuBLAS handles, NCCL communicators' buffers, CUDA graph
// executables, the runtime's own allocations — from cudaMemGetInfo deltas: free memory
// when setup begins minus the lowest free memory seen since, per GPU.
//
// What it cannot see: the CUDA context itself (~300-500 MB). CUDA makes it at
// cudaSetDevice, and no runtime call reports free memory before a context exists, so the
// baseline is read just after it. Another process allocating on the same GPU meanwhile
// would be counted; the arena's own count is a floor (peak = max of both).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cuda/check.h"

namespace tb {

class DeviceMemoryMeter {
 public:
  // The baseline of `device`: its free memory now (makes it current), or `free_bytes`
  // where the caller read it earlier (cuda-ddp: before its NCCL communicator).
  void start(int device, int64_t free_bytes = -1) {
    TB_CUDA_CHECK(cudaSetDevice(device));
    if (free_bytes < 0) free_bytes = free_now();
    gpus_.push_back({device, free_bytes, free_bytes});
  }
  // Free memory of every started GPU read again (each made current in turn: call where
  // the trainer's next call sets its own device). Outside timed regions.
  void sample() {
    for (Gpu& g : gpus_) {
      if (cudaSetDevice(g.device) != cudaSuccess) {
        cudaGetLastError();
        continue;
      }
      g.lowest = std::min(g.lowest, free_now());
    }
  }
  // The most any started GPU lost since its baseline, in bytes.
  int64_t most_bytes() const {
    int64_t most = 0;
    for (const Gpu& g : gpus_) most = std::max(most, g.baseline - g.lowest);
    return most;
  }
  // Free memory of `device` when setup began (-1: not started).
  int64_t baseline(int device) const {
    for (const Gpu& g : gpus_) {
      if (g.device == device) return g.baseline;
    }
    return -1;
  }

  static int64_t free_now() {
    size_t free_b = 0, total_b = 0;
    TB_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    return static_cast<int64_t>(free_b);
  }

 private:
  struct Gpu {
    int device;
    int64_t baseline, lowest;
  };
  std::vector<Gpu> gpus_;
};

}  // namespace tb
