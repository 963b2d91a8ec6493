// harness/backends/cuda_upload.h — helpers both GPU trainers (cuda, cuda-dp) share.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "datasets/dataset.h"

namespace tb {

// Copies the dataset into device arrays x (N x D) and y (N x O, regression) or
// labels (N, classification) on `stream`, bracketed by the two events; waits for
// it and returns the seconds the copies took on the GPU (a repetition's transfer).
double upload_dataset(const Dataset& data, float* x, float* y, int32_t* labels, cudaStream_t stream,
                      cudaEvent_t start, cudaEvent_t end);

// True when an epoch visits the rows in their stored order (batches can be read in place).
bool is_identity_order(const std::vector<int64_t>& order);

}  // namespace tb
