// kernels/cuda/step_loss.h — a graphed training step's loss into the epoch's array of
// per-step losses (no CPU twin: a CPU step returns its loss). CudaModel::graphed_step
// captures it as the graph's last node, so a replay needs no copy after it. Also the
// loading of kernels a graph uses before capture (CUDA's lazy module loading).
#pragma once

#include <cuda_runtime_api.h>

namespace tb::cuda {

// losses[*next] = *sum; ++*next — one thread on `stream`, all three pointers on its device.
void append_step_loss(const double* sum, double* losses, unsigned long long* next, cudaStream_t stream);

// Loads (cudaFuncGetAttributes) every kernel that CudaModel's graphed step captures —
// this file's and elementwise.cu's — on the current device. With lazy loading (the
// default since CUDA 12.2) a kernel is otherwise loaded at its first launch, which must
// not happen inside a stream capture. Idempotent and cheap after the first call.
void preload_graph_kernels();

}  // namespace tb::cuda
