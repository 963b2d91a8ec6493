// kernels/cuda/step_loss.cu — see step_loss.h. Three layers: static __global__
// append_step_loss_kernel (step_loss_kernels.cuh) -> static launch_append_step_loss
// (one thread) -> public append_step_loss (validates).
#include "kernels/cuda/step_loss.h"

#include "kernels/cuda/check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/step_loss_kernels.cuh"
#include "kernels/error.h"

namespace tb::cuda {

static void launch_append_step_loss(const double* sum, double* losses, unsigned long long* next, cudaStream_t stream) {
  append_step_loss_kernel<<<1, 32, 0, stream>>>(sum, losses, next);
  TB_CUDA_CHECK_LAUNCH();
}

void append_step_loss(const double* sum, double* losses, unsigned long long* next, cudaStream_t stream) {
  if (sum == nullptr || losses == nullptr || next == nullptr) throw Error("tb::cuda::append_step_loss: null pointer");
  launch_append_step_loss(sum, losses, next, stream);
}

void preload_graph_kernels() {
  cudaFuncAttributes a{};
  TB_CUDA_CHECK(cudaFuncGetAttributes(&a, append_step_loss_kernel));
  preload_elementwise_kernels();
}

}  // namespace tb::cuda
