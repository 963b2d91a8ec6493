// harness/backends/cuda_upload.cpp — see cuda_upload.h.
#include "harness/backends/cuda_upload.h"

#include "kernels/cuda/check.h"

namespace tb {

double upload_dataset(const Dataset& data, float* x, float* y, int32_t* labels, cudaStream_t stream,
                      cudaEvent_t start, cudaEvent_t end) {
  TB_CUDA_CHECK(cudaEventRecord(start, stream));
  TB_CUDA_CHECK(cudaMemcpyAsync(x, data.x.data(), data.x.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  if (labels != nullptr) {
    TB_CUDA_CHECK(cudaMemcpyAsync(labels, data.labels.data(), data.labels.size() * sizeof(int32_t),
                                  cudaMemcpyHostToDevice, stream));
  } else {
    TB_CUDA_CHECK(cudaMemcpyAsync(y, data.y.data(), data.y.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  }
  TB_CUDA_CHECK(cudaEventRecord(end, stream));
  TB_CUDA_CHECK(cudaEventSynchronize(end));
  float ms = 0;
  TB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, end));
  return ms * 1e-3;
}

bool is_identity_order(const std::vector<int64_t>& order) {
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

}  // namespace tb
