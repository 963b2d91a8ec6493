// harness/backends/cuda_staging.cpp — see cuda_staging.h: the `cuda` trainer's two batch
// staging buffers (rows x D, rows x O or labels) and their staged/consumed events.
#include "harness/backends/cuda_staging.h"

#include "kernels/cuda/check.h"

namespace tb {

void BatchStaging::acquire(DeviceArena& arena, int64_t rows, int64_t d, int64_t o, bool classification) {
  d_ = d;
  o_ = o;
  for (int i = 0; i < 2; ++i) {
    x_[i] = arena.alloc<float>(rows * d);
    if (classification) labels_[i] = arena.alloc<int32_t>(rows);
    else y_[i] = arena.alloc<float>(rows * o);
    TB_CUDA_CHECK(cudaEventCreateWithFlags(&staged_[i], cudaEventDisableTiming));
    TB_CUDA_CHECK(cudaEventCreateWithFlags(&consumed_[i], cudaEventDisableTiming));
  }
}

void BatchStaging::release() noexcept {
  for (int i = 0; i < 2; ++i) {
    if (staged_[i]) TB_CUDA_WARN(cudaEventDestroy(staged_[i]));
    if (consumed_[i]) TB_CUDA_WARN(cudaEventDestroy(consumed_[i]));
  }
}

void BatchStaging::fill(int i, const DeviceBatch& data, const int64_t* order, int64_t r0, int64_t count,
                        bool shuffled, cudaStream_t stream) const {
  if (shuffled) {
    gather_batch(data, order, count, d_, o_, x_[i], y_[i], labels_[i], stream);
  } else {
    TB_CUDA_CHECK(cudaMemcpyAsync(x_[i], data.x + r0 * d_, static_cast<size_t>(count * d_) * sizeof(float),
                                  cudaMemcpyDefault, stream));
    if (data.labels) {
      TB_CUDA_CHECK(cudaMemcpyAsync(labels_[i], data.labels + r0, static_cast<size_t>(count) * sizeof(int32_t),
                                    cudaMemcpyDefault, stream));
    } else {
      TB_CUDA_CHECK(cudaMemcpyAsync(y_[i], data.y + r0 * o_, static_cast<size_t>(count * o_) * sizeof(float),
                                    cudaMemcpyDefault, stream));
    }
  }
}

DeviceBatch BatchStaging::batch(int i) const {
  DeviceBatch b;
  b.x = x_[i];
  b.y = y_[i];
  b.labels = labels_[i];
  return b;
}

}  // namespace tb
