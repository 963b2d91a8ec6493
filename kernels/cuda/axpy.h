// kernels/cuda/axpy.h — dst += src over n floats on `stream`: the CUDA twin of
// kernels/cpu/axpy.h (same name and argument order, the stream last). cuda-dp sums
// the gradients of replicas that share a GPU with it, and, without NCCL, the ones
// copied over from other GPUs. Stream-ordered, no allocation, no host sync.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tb::cuda {

// dst[i] += src[i] for i in [0, n); dst and src on the device current for `stream`.
void add_inplace(float* dst, const float* src, int64_t n, cudaStream_t stream);

}  // namespace tb::cuda
