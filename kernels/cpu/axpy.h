// kernels/cpu/axpy.h — dst += src over n floats: the CPU twin of kernels/cuda/axpy.h,
// the addition cuda-dp uses to sum the gradients of replicas that share one GPU
// (and, without NCCL, those copied over from other GPUs). Same name and argument
// order as the CUDA op, which takes the stream last. Shapes: n elements.
#pragma once

#include <cstdint>

namespace tb::cpu {

// dst[i] += src[i] for i in [0, n); one float addition per element, so the result
// is bitwise the same whatever the thread count (and the same as the CUDA twin).
void add_inplace(float* dst, const float* src, int64_t n);

}  // namespace tb::cpu
