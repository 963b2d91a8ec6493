// harness/backends/cuda_upload.h — helpers both GPU trainers (cuda, cuda-dp) share: the
// dataset upload, batch views into it and the shuffled batch gather (D in, O out).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "datasets/dataset.h"
#include "harness/backend.h"

namespace tb {

// Copies the dataset into device arrays x (N x D) and y (N x O, regression) or
// labels (N, classification) on `stream`, bracketed by the two events; waits for it
// and returns the seconds the copies took on the GPU and the bytes copied (called by
// Trainer::prepare_repetition, before the runner's stopwatch starts).
UploadFigures upload_dataset(const Dataset& data, float* x, float* y, int32_t* labels, cudaStream_t stream,
                      cudaEvent_t start, cudaEvent_t end);

// Where a batch's rows are on the device: inputs (B x D), and targets (B x O,
// regression) or labels (B, classification).
struct DeviceBatch {
  const float* x = nullptr;
  const float* y = nullptr;
  const int32_t* labels = nullptr;
};

// Rows from r0 on, read in place from a dataset laid out on the device (x: N x D,
// y: N x O or labels: N; the other is null).
inline DeviceBatch rows_from(const float* x, const float* y, const int32_t* labels, int64_t r0, int64_t d,
                             int64_t o) {
  DeviceBatch b;
  b.x = x + r0 * d;
  if (labels) b.labels = labels + r0;
  else b.y = y + r0 * o;
  return b;
}

// The shuffled batch gather, on `stream`: row i of x (count x D) and of y (count x O,
// regression) or labels (count) is row order[i] of src (device indices of held rows).
void gather_batch(const DeviceBatch& src, const int64_t* order, int64_t count, int64_t d, int64_t o, float* x,
                  float* y, int32_t* labels, cudaStream_t stream);

// True when an epoch visits the rows in their stored order (batches can be read in place).
bool is_identity_order(const std::vector<int64_t>& order);

}  // namespace tb
