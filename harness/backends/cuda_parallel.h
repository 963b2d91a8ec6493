// harness/backends/cuda_parallel.h — what turns the single-GPU trainer
// (backends/cuda.cpp) into one rank of a data-parallel job (backends/cuda_ddp.cpp):
// a host communicator for the few scalars (initial parameters, step losses, times,
// final checks) and a gradient reducer (grad_reducer.h: NCCL, on device buckets as
// backward produces them). With neither, the trainer is plain `cuda`.
#pragma once

#include <cstdint>
#include <memory>

#include "harness/backend.h"
#include "harness/backends/grad_reducer.h"
#include "harness/comm/communicator.h"

namespace tb {

struct CudaParallel {
  std::shared_ptr<Communicator> world;   // host collectives (MPI); null for one GPU
  std::unique_ptr<GradReducer> reducer;  // device gradient all-reduce (NCCL)
  // Free memory of the rank's GPU before the reducer was made (cudaMemGetInfo, bytes),
  // so peak_device_mem_bytes counts the communicator's buffers; -1: read by the trainer.
  int64_t device_free_at_start = -1;
};

// The trainer behind `cuda` (parallel empty) and `cuda-ddp` (both set).
std::unique_ptr<Trainer> make_cuda_trainer(const Dataset& data, const RunConfig& cfg, CudaParallel parallel);

// Device bytes that trainer allocates for data and cfg (its pre-check's figure, the
// "needs" of an out-of-memory row).
int64_t cuda_trainer_device_bytes(const Dataset& data, const RunConfig& cfg);

}  // namespace tb
