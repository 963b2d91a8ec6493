// kernels/cuda/step_loss_kernels.cuh — the device code of kernels/cuda/step_loss.cu (a
// header so tests/cuda_emu/ can run it on the CPU; see elementwise_kernels.cuh).
#pragma once

#include <cstdint>

#include "kernels/cuda/launch.cuh"

namespace tb::cuda {

// One thread: losses[*next] = *sum, then *next + 1. A CUDA graph replays the same
// arguments every time, so the slot a replayed step writes comes from device memory
// (next), which the graph itself advances; sum is the step's scratch loss sum.
static __global__ void append_step_loss_kernel(const double* sum, double* losses, unsigned long long* next) {
  if (thread_index() != 0) return;
  losses[*next] = *sum;
  *next += 1;
}

}  // namespace tb::cuda
