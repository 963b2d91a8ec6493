// harness/backends/cuda_parallel.h — what turns the single-GPU trainer
// (backends/cuda.cpp) into one rank of a data-parallel job (backends/cuda_ddp.cpp):
// a host communicator for the few scalars (initial parameters, step losses, times,
// final checks) and a gradient reducer that all-reduces device buckets on its own
// stream as backward produces them. With neither, the trainer is plain `cuda`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "harness/backend.h"
#include "harness/comm/communicator.h"
#include "harness/model.h"

namespace tb {

class GradReducer {
 public:
  virtual ~GradReducer() = default;
  // Called once, after the trainer allocated its flat gradient buffer (device).
  virtual void bind(float* grads, const ParamLayout& layout) = 0;
  // A new epoch of `steps` steps begins (sizes per-step timing state).
  virtual void begin_epoch(int64_t steps) = 0;
  // Step `step`: the gradients of layer `layer` (and all later layers) are final on `compute`.
  virtual void layer_ready(int64_t step, int layer, cudaStream_t compute) = 0;
  // Makes `compute` wait until every bucket of step `step` is reduced.
  virtual void finish(int64_t step, cudaStream_t compute) = 0;
  // After the epoch's synchronisation: seconds the reductions of the epoch took on
  // their stream (first bucket start to last bucket end, summed over steps).
  virtual double epoch_busy_seconds() = 0;
  virtual int64_t bytes_per_step() const = 0;
};

struct CudaParallel {
  std::shared_ptr<Communicator> world;   // host collectives (MPI); null for one GPU
  std::unique_ptr<GradReducer> reducer;  // device gradient all-reduce (NCCL)
};

// The trainer behind `cuda` (parallel empty) and `cuda-ddp` (both set).
std::unique_ptr<Trainer> make_cuda_trainer(const Dataset& data, const TrainOptions& opt, CudaParallel parallel);

}  // namespace tb
