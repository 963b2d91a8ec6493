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
};

// The trainer behind `cuda` (parallel empty) and `cuda-ddp` (both set).
std::unique_ptr<Trainer> make_cuda_trainer(const Dataset& data, const RunConfig& cfg, CudaParallel parallel);

}  // namespace tb
