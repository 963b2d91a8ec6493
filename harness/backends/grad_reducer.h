// harness/backends/grad_reducer.h — GradReducer: what turns one model into one rank of
// a DDP job, one interface for CPU and GPU: buckets of the flat gradient buffer (P
// floats; one plan, ddp_plan.h plan_buckets) summed over the ranks as backward produces
// them. cpu-ddp = CpuModel + the MPI reducer (mpi_grad_reducer.cpp, host buffers);
// cuda-ddp = CudaModel + the NCCL reducer (nccl_grad_reducer.cpp, device buffers).
#pragma once

#include <cstdint>
#include <memory>

#include "harness/backend.h"
#include "harness/comm/communicator.h"
#include "harness/model.h"

struct CUstream_st;  // cudaStream_t, without the CUDA headers

namespace tb {

// The gradients a reducer sums in place: where they are and, on a GPU, the stream that
// writes them (backward) and reads them (the update) — the reducer orders itself after
// and before that stream, so its calls below need no stream.
struct GradBuffer {
  float* grads = nullptr;          // P floats: host memory (MPI) or device memory (NCCL)
  CUstream_st* compute = nullptr;  // NCCL: the model's stream; MPI: none
};

class GradReducer {
 public:
  virtual ~GradReducer() = default;
  // Once, after the model allocated its gradients; layout gives the bucket plan's layers.
  virtual void bind(const GradBuffer& buffer, const ParamLayout& layout) = 0;
  // A new epoch of `steps` steps begins (step indices below are 0-based within it).
  virtual void begin_epoch(int64_t steps) = 0;
  // Step `step`: the gradients of layer `layer` (and of every later layer) are final —
  // the model's backward on_layer contract, last layer first. Buckets starting at that
  // layer go now (with overlap; --no-overlap keeps them for finish()).
  virtual void layer_ready(int64_t step, int layer) = 0;
  // Every bucket of step `step` is summed before the update reads the gradients: the
  // buckets layer_ready() did not start go now (--no-overlap, or a step that ran no
  // backward); MPI returns once they are done, NCCL makes the compute stream wait.
  virtual void finish(int64_t step) = 0;
  // The epoch's reduction time (busbw's t), read after its last finish(): NCCL, the sum of
  // each bucket's all-reduce interval between events recorded right before and after it
  // on the reducer's stream (read after the epoch's synchronisation, by the trainer's
  // take_phase_times()); MPI, host time inside the all-reduce calls and progress polls.
  virtual double epoch_busy_seconds() = 0;
  // Host seconds layer_ready() spent driving communication since the last call, to be
  // counted as exposed communication (comm_s) rather than backward: MPI progresses a
  // non-blocking all-reduce only inside MPI calls. 0 where progress is asynchronous (NCCL).
  virtual double take_progress_seconds() { return 0; }
  virtual int64_t bytes_per_step() const = 0;  // 4 P
};

// cpu-ddp's: host buffers over `world` (the MPI communicator; any Communicator works),
// cfg's bucket_bytes and overlap. Non-blocking all-reduces for every bucket but the last,
// which takes the blocking one (nothing is left to hide it behind, and Open MPI's
// blocking algorithms are faster).
std::unique_ptr<GradReducer> make_mpi_grad_reducer(Communicator& world, const RunConfig& cfg);

// Built with CUDA, NCCL and MPI (cuda-ddp): a non-blocking NCCL communicator over the
// ranks of `world` (rank 0's id shared over MPI, a collective) on `device`, its own
// stream, and a watchdog that aborts the job when reductions stop progressing for
// cfg.comm_timeout_s.
std::unique_ptr<GradReducer> make_nccl_grad_reducer(Communicator& world, int device, const RunConfig& cfg);

}  // namespace tb
