// harness/backends/mpi_grad_reducer.cpp — cpu-ddp's GradReducer (grad_reducer.h): buckets
// of the host gradient buffer (P floats; ddp_plan.h plan_buckets) summed over the ranks
// of the MPI communicator, each started as soon as backward has produced it.
//
// With overlap every bucket but the last starts as a non-blocking all-reduce in
// layer_ready() and is waited for in finish(); the last one, with no backward left to
// hide behind, goes through the blocking all-reduce (faster in Open MPI; with one bucket
// this equals --no-overlap). Every rank issues the same calls in the same order whatever
// its shard: which kind a bucket takes depends on its index only (MPI never matches a
// blocking collective with a non-blocking one).
#include <vector>

#include "harness/backends/grad_reducer.h"
#include "harness/ddp_plan.h"
#include "harness/timing.h"

namespace tb {
namespace {

class MpiGradReducer final : public GradReducer {
 public:
  MpiGradReducer(Communicator& world, const RunConfig& cfg)
      : world_(world), bucket_bytes_(cfg.bucket_bytes()), overlap_(cfg.overlap) {}

  void bind(const GradBuffer& buffer, const ParamLayout& layout) override {
    grads_ = buffer.grads;
    buckets_ = plan_buckets(layout, bucket_bytes_);
    handles_.assign(buckets_.size(), -1);
    bytes_ = layout.total * static_cast<int64_t>(sizeof(float));
  }

  void begin_epoch(int64_t) override {
    busy_s_ = 0;
    next_ = 0;
  }

  void layer_ready(int64_t, int layer) override {
    while (next_ < buckets_.size() && buckets_[next_].first_layer == layer) issue(next_++);
    // Open MPI progresses a non-blocking all-reduce only inside MPI calls: this is
    // all-reduce time (busbw's t) and exposed communication, not backward's.
    Stopwatch p;
    world_.poke();
    const double s = p.seconds();
    progress_s_ += s;
    busy_s_ += s;
  }

  void finish(int64_t) override {
    while (next_ < buckets_.size()) issue(next_++);
    next_ = 0;
    Stopwatch c;  // what is left to wait for (overlap), or everything
    for (size_t k = 0; k < buckets_.size(); ++k) {
      if (non_blocking(k)) world_.wait(handles_[k]);
      else world_.allreduce_sum(grads_ + buckets_[k].offset, buckets_[k].count);
    }
    busy_s_ += c.seconds();
  }

  double epoch_busy_seconds() override { return busy_s_; }

  double take_progress_seconds() override {
    const double s = progress_s_;
    progress_s_ = 0;
    return s;
  }

  int64_t bytes_per_step() const override { return bytes_; }

 private:
  bool non_blocking(size_t k) const { return overlap_ && k + 1 < buckets_.size(); }

  // Starts bucket k's non-blocking all-reduce (the last bucket, or all with --no-overlap, wait for finish()).
  void issue(size_t k) {
    if (!non_blocking(k)) return;
    Stopwatch c;
    handles_[k] = world_.iallreduce_sum(grads_ + buckets_[k].offset, buckets_[k].count);
    busy_s_ += c.seconds();
  }

  Communicator& world_;
  int64_t bucket_bytes_;
  bool overlap_;
  float* grads_ = nullptr;
  std::vector<Bucket> buckets_;
  std::vector<int> handles_;  // [bucket]: the non-blocking all-reduce in flight
  size_t next_ = 0;           // the next bucket to issue in this step
  int64_t bytes_ = 0;
  double busy_s_ = 0, progress_s_ = 0;
};

}  // namespace

std::unique_ptr<GradReducer> make_mpi_grad_reducer(Communicator& world, const RunConfig& cfg) {
  return std::make_unique<MpiGradReducer>(world, cfg);
}

}  // namespace tb
