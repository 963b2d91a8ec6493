// harness/backends/cuda_upload.cpp — see cuda_upload.h: the dataset upload (N x D, N x O
// or labels) and the shuffled batch gather both GPU trainers share.
#include "harness/backends/cuda_upload.h"

#include "kernels/cuda/check.h"
#include "kernels/cuda/elementwise.h"

namespace tb {

UploadFigures upload_dataset(const Dataset& data, float* x, float* y, int32_t* labels, cudaStream_t stream,
                             cudaEvent_t start, cudaEvent_t end) {
  UploadFigures f;
  const size_t target_bytes = labels != nullptr ? data.labels.size() * sizeof(int32_t) : data.y.size() * sizeof(float);
  f.bytes = static_cast<int64_t>(data.x.size() * sizeof(float) + target_bytes);
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
  f.seconds = ms * 1e-3;
  return f;
}

void gather_batch(const DeviceBatch& src, const int64_t* order, int64_t count, int64_t d, int64_t o, float* x,
                  float* y, int32_t* labels, cudaStream_t stream) {
  cuda::gather_rows(src.x, order, count, d, x, stream);
  if (src.labels) cuda::gather_labels(src.labels, order, count, labels, stream);
  else cuda::gather_rows(src.y, order, count, o, y, stream);
}

bool is_identity_order(const std::vector<int64_t>& order) {
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

}  // namespace tb
