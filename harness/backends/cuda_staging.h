// harness/backends/cuda_staging.h — BatchStaging: the `cuda` trainer's two batch
// staging buffers (backends/cuda.cpp). A step whose rows cannot be read in place from
// the dataset gets them gathered (shuffled) or copied (consecutive) into one of them:
// with host placement the copy stream fills buffer s % 2 from the mapped host data
// while the compute stream trains on the other, the two ordered by each buffer's
// staged and consumed events (harness/backends/transfer_schedule.h); with device placement a
// gather (or a graphed step) uses buffer 0 on the compute stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "harness/backends/cuda_upload.h"
#include "harness/backends/device_arena.h"

namespace tb {

class BatchStaging {
 public:
  // Buffers of `rows` rows — x (rows x d), then labels (rows; classification) or y
  // (rows x o) — from `arena`, and their staged and consumed events, buffer 0 then 1.
  void acquire(DeviceArena& arena, int64_t rows, int64_t d, int64_t o, bool classification);
  // Destroys the events acquire() created, however far it went (the arena frees the memory).
  void release() noexcept;

  // Writes rows into buffer i on `stream`: `count` rows of `data` (the dataset: x and
  // labels or y) gathered by the device indices `order` when shuffled, else the
  // consecutive rows from r0 in one copy each.
  void fill(int i, const DeviceBatch& data, const int64_t* order, int64_t r0, int64_t count, bool shuffled,
            cudaStream_t stream) const;
  // Buffer i as a batch.
  DeviceBatch batch(int i) const;

  cudaEvent_t staged(int i) const { return staged_[i]; }      // buffer i filled (copy stream)
  cudaEvent_t consumed(int i) const { return consumed_[i]; }  // buffer i read (compute stream)

 private:
  int64_t d_ = 0, o_ = 0;
  float* x_[2] = {nullptr, nullptr};
  float* y_[2] = {nullptr, nullptr};
  int32_t* labels_[2] = {nullptr, nullptr};
  cudaEvent_t staged_[2] = {nullptr, nullptr}, consumed_[2] = {nullptr, nullptr};
};

}  // namespace tb
