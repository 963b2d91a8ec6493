// harness/backends/nccl_grad_reducer.cpp — cuda-ddp's GradReducer (grad_reducer.h):
// buckets of the device gradient buffer (P floats; ddp_plan.h plan_buckets, the plan of
// cpu-ddp's MPI reducer) summed in place by ncclAllReduce on the reducer's own stream.
//
// Each bucket is enqueued as soon as backward has produced it on the model's compute
// stream (given at bind; --no-overlap: all in finish()); the compute stream waits for
// the last one before the update. Busy time (busbw's t): each bucket's all-reduce is
// bracketed by its own pair of timing events on the NCCL stream, right before and after
// the ncclAllReduce, and the intervals are summed — not first bucket's start to last
// bucket's end, which would count the backward compute between buckets. The pairs are
// a fixed pool for the steps phase_sample.h picks (every step of an epoch of up to
// kMaxTimedSteps steps), read after the epoch, outside the timed region.
// Bootstrap: rank 0's ncclUniqueId shared over MPI.
// Faults: a non-blocking communicator and a watchdog thread that polls NCCL's async
// error and the steps' completion; past --comm-timeout it aborts the communicator and
// ends the process, and mpirun ends the rest of the job.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/backends/grad_reducer.h"
#include "harness/backends/phase_sample.h"
#include "harness/comm/nccl_bootstrap.h"
#include "harness/ddp_plan.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/nccl_check.h"

namespace tb {
namespace {

// TB_NCCL_CHECK for calls on this rank's non-blocking communicator: checks the call's
// result once it has settled (wait_nccl, below).
#define TB_NCCL_CHECK_SETTLED(stmt) TB_NCCL_CHECK_RESULT(wait_nccl(comm_, (stmt), timeout_s_), #stmt)

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A non-blocking communicator may answer ncclInProgress; the call has then been
// accepted and completes (or fails) asynchronously: poll until it settles. A call
// that does not settle within the deadline (a peer died during setup) aborts the
// communicator (*aborted then true) and reports a system error.
ncclResult_t wait_nccl(ncclComm_t comm, ncclResult_t r, double timeout_s, bool* aborted = nullptr) {
  const double start = now_s();
  while (r == ncclInProgress && comm != nullptr) {
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm, &state);
    r = state;
    if (r != ncclInProgress) break;
    if (now_s() - start > timeout_s) {
      ncclCommAbort(comm);
      if (aborted) *aborted = true;
      return ncclSystemError;
    }
    std::this_thread::yield();
  }
  return r;
}

class NcclGradReducer final : public GradReducer {
 public:
  NcclGradReducer(Communicator& world, int device, const RunConfig& cfg)
      : rank_(world.rank()), device_(device), bucket_bytes_(cfg.bucket_bytes()), overlap_(cfg.overlap),
        timeout_s_(cfg.comm_timeout_s) {
    const std::string id_bytes = nccl_unique_id_bytes(world);
    ncclUniqueId id;
    std::memcpy(id.internal, id_bytes.data(), sizeof id.internal);
    TB_CUDA_CHECK(cudaSetDevice(device));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // calls return at once; errors surface through ncclCommGetAsyncError
    ncclComm_t comm = nullptr;
    const ncclResult_t r = ncclCommInitRankConfig(&comm, world.size(), id, world.rank(), &config);
    comm_ = comm;
    try {
      TB_NCCL_CHECK_SETTLED(r);
      TB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    } catch (...) {
      // No destructor runs for a half-built object: leave nothing behind (abort, not
      // destroy: the other ranks may already be gone).
      if (comm_) ncclCommAbort(comm_);
      comm_ = nullptr;
      throw;
    }
    watchdog_ = std::thread([this] { watch(); });
  }

  ~NcclGradReducer() override {
    stop_ = true;
    if (watchdog_.joinable()) watchdog_.join();
    cudaSetDevice(device_);
    for (cudaEvent_t ev : step_done_) TB_CUDA_WARN(cudaEventDestroy(ev));
    for (cudaEvent_t ev : bucket_marks_) {
      if (ev) TB_CUDA_WARN(cudaEventDestroy(ev));
    }
    for (cudaEvent_t ev : ready_) TB_CUDA_WARN(cudaEventDestroy(ev));
    if (done_) TB_CUDA_WARN(cudaEventDestroy(done_));
    if (comm_) {
      // A non-blocking communicator is finalised (its pending work flushed) before it
      // is destroyed, the sequence NCCL documents; one that does not settle within the
      // deadline (a peer gone) is aborted instead.
      bool aborted = false;
      if (wait_nccl(comm_, ncclCommFinalize(comm_), timeout_s_, &aborted) == ncclSuccess) ncclCommDestroy(comm_);
      else if (!aborted) ncclCommAbort(comm_);
    }
    if (stream_) TB_CUDA_WARN(cudaStreamDestroy(stream_));
  }

  void bind(const GradBuffer& buffer, const ParamLayout& layout) override {
    grads_ = buffer.grads;
    compute_ = buffer.compute;
    buckets_ = plan_buckets(layout, bucket_bytes_);
    bytes_ = layout.total * static_cast<int64_t>(sizeof(float));
    for (size_t k = 0; k < buckets_.size(); ++k) {
      cudaEvent_t e = nullptr;
      TB_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      ready_.push_back(e);
    }
    TB_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    // [slot][bucket][start, end]: a fixed pool, whatever the epoch's length.
    bucket_marks_.assign(static_cast<size_t>(kMaxTimedSteps) * buckets_.size() * 2, nullptr);
    for (cudaEvent_t& e : bucket_marks_) TB_CUDA_CHECK(cudaEventCreate(&e));
  }

  void begin_epoch(int64_t steps) override {
    std::lock_guard<std::mutex> lock(mutex_);  // the watchdog reads step_done_
    // The watchdog's progress events, one per step: its last bucket has ended (no timing).
    while (static_cast<int64_t>(step_done_.size()) < steps) {
      cudaEvent_t ev = nullptr;
      TB_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
      step_done_.push_back(ev);
    }
    steps_ = steps;
    sample_ = PhaseSample(steps);
    next_.assign(static_cast<size_t>(steps), 0);
    watched_ = 0;
    issued_ = -1;
    since_ = now_s();
  }

  void layer_ready(int64_t step, int layer) override {
    if (!overlap_) return;
    size_t& next = next_[static_cast<size_t>(step)];
    while (next < buckets_.size() && buckets_[next].first_layer == layer) issue(step, next++);
  }

  void finish(int64_t step) override {
    size_t& next = next_[static_cast<size_t>(step)];
    while (next < buckets_.size()) issue(step, next++);  // --no-overlap: everything now
    TB_CUDA_CHECK(cudaEventRecord(step_done_[static_cast<size_t>(step)], stream_));
    TB_CUDA_CHECK(cudaEventRecord(done_, stream_));
    TB_CUDA_CHECK(cudaStreamWaitEvent(compute_, done_, 0));
    std::lock_guard<std::mutex> lock(mutex_);
    issued_ = step;  // the watchdog now expects this step's reductions to finish
  }

  // The sum over the timed steps of each bucket's all-reduce interval, each step's sum
  // times the steps it stands for (after the epoch's synchronisation).
  double epoch_busy_seconds() override {
    double s = 0;
    for (int64_t j = 0; j < sample_.timed(); ++j) {
      double step_ms = 0;
      for (size_t k = 0; k < buckets_.size(); ++k) {
        float ms = 0;
        TB_CUDA_CHECK(cudaEventElapsedTime(&ms, bucket_mark(j, k, 0), bucket_mark(j, k, 1)));
        step_ms += ms;
      }
      s += step_ms * 1e-3 * sample_.weight(j);
    }
    return s;
  }

  int64_t bytes_per_step() const override { return bytes_; }

 private:
  // Bucket k of `step`: wait (on the NCCL stream) for backward to have produced it, then reduce in place.
  void issue(int64_t step, size_t k) {
    const Bucket& b = buckets_[k];
    TB_CUDA_CHECK(cudaEventRecord(ready_[k], compute_));
    TB_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_[k], 0));
    const int64_t slot = sample_.slot(step);
    if (slot >= 0) TB_CUDA_CHECK(cudaEventRecord(bucket_mark(slot, k, 0), stream_));
    float* p = grads_ + b.offset;
    TB_NCCL_CHECK_SETTLED(ncclAllReduce(p, p, static_cast<size_t>(b.count), ncclFloat, ncclSum, comm_, stream_));
    if (slot >= 0) TB_CUDA_CHECK(cudaEventRecord(bucket_mark(slot, k, 1), stream_));
  }
  cudaEvent_t bucket_mark(int64_t slot, size_t bucket, int end) const {
    return bucket_marks_[(static_cast<size_t>(slot) * buckets_.size() + bucket) * 2 + static_cast<size_t>(end)];
  }

  // Every 100 ms: an asynchronous NCCL error, or no step's reductions completing for
  // longer than the deadline while some are queued (a peer died or hangs), ends this
  // process after aborting the communicator (which releases kernels waiting on the
  // dead peer). Progress-based: the host may queue many steps ahead of the GPU, so
  // the clock restarts whenever one more step's last bucket completes.
  void watch() {
    cudaSetDevice(device_);
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      ncclResult_t state = ncclSuccess;
      if (comm_ && ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state != ncclSuccess &&
          state != ncclInProgress) {
        die(std::string("NCCL error: ") + ncclGetErrorString(state));
      }
      std::lock_guard<std::mutex> lock(mutex_);
      while (watched_ <= issued_ &&
             cudaEventQuery(step_done_[static_cast<size_t>(watched_)]) == cudaSuccess) {
        ++watched_;
        since_ = now_s();
      }
      cudaGetLastError();  // cudaErrorNotReady is not an error for the next caller
      if (watched_ <= issued_ && now_s() - since_ > timeout_s_) {
        die("gradient all-reduce made no progress for " + std::to_string(static_cast<int>(timeout_s_)) +
            " s (a peer rank died or hung)");
      }
    }
  }

  [[noreturn]] void die(const std::string& why) {
    std::fprintf(stderr, "trainbench: rank %d: %s; aborting the job\n", rank_, why.c_str());
    std::fflush(stderr);
    ncclCommAbort(comm_);
    std::_Exit(3);  // mpirun notices and ends the other ranks
  }

  int rank_, device_;
  int64_t bucket_bytes_;
  bool overlap_;
  double timeout_s_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;   // the reductions'
  cudaStream_t compute_ = nullptr;  // the model's (bind): backward and the update
  float* grads_ = nullptr;
  std::vector<Bucket> buckets_;
  std::vector<cudaEvent_t> ready_;
  cudaEvent_t done_ = nullptr;
  std::vector<cudaEvent_t> step_done_;     // [step]: its last bucket has ended (the watchdog's)
  std::vector<cudaEvent_t> bucket_marks_;  // [slot][bucket][start, end], kMaxTimedSteps slots
  PhaseSample sample_;                     // the epoch's timed steps
  std::vector<size_t> next_;
  int64_t steps_ = 0, bytes_ = 0;
  std::mutex mutex_;                  // guards step_done_, watched_, issued_, since_
  int64_t watched_ = 0, issued_ = -1;  // oldest step not seen complete; newest step queued
  double since_ = 0;                   // when watched_ last advanced
  std::atomic<bool> stop_{false};
  std::thread watchdog_;
};

}  // namespace

std::unique_ptr<GradReducer> make_nccl_grad_reducer(Communicator& world, int device, const RunConfig& cfg) {
  return std::make_unique<NcclGradReducer>(world, device, cfg);
}

}  // namespace tb
