// harness/backends/cpu_ddp.cpp — `cpu-ddp`: DistributedDataParallel semantics over
// MPI, one process per rank (launched by mpirun/srun), T OpenMP threads each.
// Per step on a global batch of B rows: rank r trains its shard (ddp_plan.h
// shard_of) with gradients scaled by 1/B, so the sum over ranks is the global-batch
// mean; buckets of the flat gradient buffer are all-reduced as soon as backward has
// produced them (or all after backward with --no-overlap); every rank applies the
// same SGD update. The step loss is summed over ranks, so a non-finite loss stops
// every rank at the same step. Only rank 0 writes results; times are max over ranks.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "harness/backend.h"
#include "harness/comm/mpi_session.h"
#include "harness/cpu_model.h"
#include "harness/cpu_trainer_base.h"
#include "harness/ddp_plan.h"
#include "harness/rank_data.h"
#include "kernels/cpu/elementwise.h"

namespace tb {
namespace {

class CpuDdpTrainer final : public StepTrainer {
 public:
  CpuDdpTrainer(const Dataset& data, const TrainOptions& opt, std::shared_ptr<Communicator> comm)
      : opt_(opt), comm_(std::move(comm)), data_(data),
        // A shard has at most ceil(B / world) rows.
        model_(opt.model, data, (opt.batch + comm_->size() - 1) / comm_->size()),
        velocity_(static_cast<size_t>(model_.layout().total)),
        buckets_(plan_buckets(model_.layout(), opt.bucket_bytes)),
        fault_(fault_from_env()) {
    handles_.resize(buckets_.size());
    if (fault_.armed() && fault_.kind == "setup" && fault_.rank == comm_->rank()) {
      inject_fault(fault_.kind, comm_->rank(), 0);
    }
    if (opt.deterministic) {
      if (kLeaves % comm_->size() != 0) {
        throw std::invalid_argument("--deterministic: the world size " + std::to_string(comm_->size()) +
                                    " does not divide the " + std::to_string(kLeaves) + " leaves of a batch");
      }
      const size_t p = static_cast<size_t>(model_.layout().total);
      const size_t mine = static_cast<size_t>(kLeaves / comm_->size());
      leaf_grads_.resize(mine * p);
      leaf_loss_.resize(mine);
      all_grads_.resize(static_cast<size_t>(kLeaves) * p);
      all_loss_.resize(static_cast<size_t>(kLeaves));
    }
  }

  void set_params(const std::vector<float>& params) override {
    model_.params() = params;
    comm_->broadcast(model_.params().data(), static_cast<int64_t>(params.size()), 0);  // rank 0's copy wins
    std::fill(velocity_.begin(), velocity_.end(), 0.0f);
  }
  std::vector<float> params() const override { return model_.params(); }
  std::string precision() const override { return "fp32"; }
  int64_t allreduce_bytes_per_step() const override {
    return static_cast<int64_t>(model_.layout().total * sizeof(float));
  }
  double allreduce_busy_s() const override { return last_busy_s_; }
  int64_t allreduce_steps() const override { return last_busy_steps_; }

  PhaseTimes take_phase_times() override {
    // This rank's own figures: the runner takes the maximum over ranks.
    last_busy_s_ = busy_s_;
    last_busy_steps_ = busy_steps_;
    busy_s_ = 0;
    busy_steps_ = 0;
    return StepTrainer::take_phase_times();
  }

  EpochResult train_epoch(const EpochPlan& plan, const StepCallback& on_step) override {
    omp_set_num_threads(opt_.threads);
    return StepTrainer::train_epoch(plan, on_step);
  }

  // Each rank evaluates its rows (rank_data.h eval_ranges); sums are combined. Also checks that
  // every rank ended with the same parameters.
  EvalResult evaluate() override {
    omp_set_num_threads(opt_.threads);
    double loss_sum = 0;
    int64_t hits = 0;
    for (const Shard& r : eval_ranges(data_, opt_.batch, comm_->rank(), comm_->size())) {
      double l = 0;
      int64_t h = 0;
      model_.evaluate_rows(r.begin, r.end, &l, &h);
      loss_sum += l;
      hits += h;
    }
    double sums[2] = {loss_sum, static_cast<double>(hits)};
    comm_->allreduce_sum(sums, 2);
    EvalResult e;
    e.loss = sums[0] / static_cast<double>(data_.n);
    if (data_.task == Task::kClassification) e.accuracy = sums[1] / static_cast<double>(data_.n);
    return e;
  }

 protected:
  double step(const int64_t* rows, int64_t count, int64_t global_rows) override {
    ++steps_;
    try {
      return step_or_throw(rows, count, global_rows);
    } catch (const std::exception& e) {
      // The other ranks are (or soon will be) waiting in a collective for us:
      // end the whole job now rather than letting the watchdog find out.
      comm_->abort(1, e.what());
      throw;  // not reached: abort() ends the process
    }
  }

 private:
  double step_or_throw(const int64_t* rows, int64_t count, int64_t global_rows) {
    if (fault_.armed() && fault_.kind != "nan" && fault_.rank == comm_->rank() && fault_.step == steps_) {
      inject_fault(fault_.kind, comm_->rank(), steps_);
    }
    if (opt_.deterministic) return deterministic_step(rows, count, global_rows);
    Stopwatch sw;
    const Shard s = shard_of(count, comm_->rank(), comm_->size());
    const int64_t local = s.end - s.begin;
    double loss_sum = 0;
    std::vector<float>& grads = model_.grads();
    // With overlap, every bucket but the last is started as soon as it is ready.
    // The last one has no backward work left to hide behind, so it goes through the
    // blocking all-reduce below (MPI's tuned blocking algorithms beat its
    // non-blocking ones; with one bucket this equals --no-overlap).
    const size_t last = buckets_.size() - 1;
    auto issue = [&](size_t k) {
      if (!opt_.overlap || k == last) return;
      const Bucket& b = buckets_[k];
      Stopwatch c;
      handles_[k] = comm_->iallreduce_sum(grads.data() + b.offset, b.count);
      busy_s_ += c.seconds();
    };
    if (local > 0) {
      const BatchView bv = model_.load_batch(rows + s.begin, local);
      if (bv.gathered) phases_.transfer_s += sw.lap();
      const bool fused = model_.has_fused_step();  // linear regression: one pass, as cpu-omp
      if (fused) {
        loss_sum = model_.fused_step(bv, local, global_rows);
      } else {
        model_.forward(bv.x, local);
        loss_sum = model_.loss(bv, local, global_rows, true, nullptr);
      }
      if (fault_.nan_at(comm_->rank(), steps_)) {
        loss_sum = std::numeric_limits<double>::quiet_NaN();
      }
      phases_.forward_s += sw.lap();
      size_t next = 0;  // buckets are issued in their fixed order as they become ready
      double polled = 0;  // time inside MPI progress polls during backward
      if (fused) {
        while (next < buckets_.size()) issue(next++);  // one layer: every bucket is ready now
      } else {
        model_.backward(bv.x, local, [&](int layer) {
          while (next < buckets_.size() && buckets_[next].first_layer == layer) issue(next++);
          // Open MPI progresses a non-blocking all-reduce only inside MPI calls: this
          // one is all-reduce time (busbw's t, README) and exposed communication
          // (comm_s), not backward's.
          Stopwatch p;
          comm_->poke();
          polled += p.seconds();
        });
        busy_s_ += polled;
        phases_.comm_s += polled;
        phases_.backward_s += sw.lap() - polled;
      }
    } else {
      // An empty shard (global batch smaller than the world) contributes zero.
      std::fill(grads.begin(), grads.end(), 0.0f);
      for (size_t k = 0; k < buckets_.size(); ++k) issue(k);
      sw.lap();
    }
    // Exposed communication: what is left to wait for (overlap), or everything.
    Stopwatch c;
    for (size_t k = 0; k < buckets_.size(); ++k) {
      if (opt_.overlap && k != last) comm_->wait(handles_[k]);
      else comm_->allreduce_sum(grads.data() + buckets_[k].offset, buckets_[k].count);
    }
    const double reduced = c.seconds();  // the gradient buckets: busbw's t
    double loss = loss_sum;
    comm_->allreduce_sum(&loss, 1);
    const double waited = c.seconds();  // + the 8-byte loss sum: exposed communication
    busy_s_ += reduced;
    ++busy_steps_;
    phases_.comm_s += waited;
    sw.lap();
    cpu::sgd_update(model_.params().data(), grads.data(), velocity_.data(), model_.layout().total,
                    static_cast<float>(opt_.lr), static_cast<float>(opt_.momentum),
                    static_cast<float>(opt_.weight_decay));
    phases_.optimizer_s += sw.lap();
    // The per-row mean over the global batch; the base class checks it is finite.
    return loss / static_cast<double>(count);
  }

  // --deterministic: this rank's leaves one by one, then every leaf gradient on
  // every rank, added in the fixed tree (ddp_plan.h). Bitwise equal for any world
  // size dividing kLeaves, at the price of an all-gather of kLeaves x P floats.
  double deterministic_step(const int64_t* rows, int64_t count, int64_t global_rows) {
    Stopwatch sw;
    const int64_t p = model_.layout().total;
    const int per_rank = kLeaves / comm_->size();
    std::vector<float>& grads = model_.grads();
    for (int k = 0; k < per_rank; ++k) {
      const Shard leaf = shard_of(count, comm_->rank() * per_rank + k, kLeaves);
      const int64_t local = leaf.end - leaf.begin;
      float* out = leaf_grads_.data() + k * p;
      if (local == 0) {
        std::fill(out, out + p, 0.0f);
        leaf_loss_[k] = 0;
        continue;
      }
      const BatchView bv = model_.load_batch(rows + leaf.begin, local);
      if (bv.gathered) phases_.transfer_s += sw.lap();
      model_.forward(bv.x, local);
      leaf_loss_[k] = model_.loss(bv, local, global_rows, true, nullptr);
      if (fault_.nan_at(comm_->rank(), steps_)) {
        leaf_loss_[k] = std::numeric_limits<double>::quiet_NaN();
      }
      phases_.forward_s += sw.lap();
      model_.backward(bv.x, local);
      std::copy(grads.begin(), grads.end(), out);
      phases_.backward_s += sw.lap();
    }
    Stopwatch c;
    comm_->allgather(leaf_grads_.data(), per_rank * p, all_grads_.data());
    comm_->allgather(leaf_loss_.data(), per_rank, all_loss_.data());
    const double waited = c.seconds();
    busy_s_ += waited;
    ++busy_steps_;
    phases_.comm_s += waited;
    sw.lap();
    tree_sum(all_grads_.data(), kLeaves, p);
    tree_sum(all_loss_.data(), kLeaves, 1);
    cpu::sgd_update(model_.params().data(), all_grads_.data(), velocity_.data(), p, static_cast<float>(opt_.lr),
                    static_cast<float>(opt_.momentum), static_cast<float>(opt_.weight_decay));
    phases_.optimizer_s += sw.lap();
    return all_loss_[0] / static_cast<double>(count);
  }

  TrainOptions opt_;
  std::shared_ptr<Communicator> comm_;
  const Dataset& data_;
  CpuModel model_;
  std::vector<float> velocity_;
  std::vector<Bucket> buckets_;
  std::vector<int> handles_;
  std::vector<float> leaf_grads_, all_grads_;  // deterministic mode: (kLeaves / N) x P and kLeaves x P
  std::vector<double> leaf_loss_, all_loss_;
  Fault fault_;
  int64_t steps_ = 0;
  double busy_s_ = 0, last_busy_s_ = 0;
  int64_t busy_steps_ = 0, last_busy_steps_ = 0;
};

class CpuDdpBackend final : public Backend {
 public:
  std::string name() const override { return "cpu-ddp"; }
  std::string description() const override { return "N processes x T threads, MPI, DDP semantics"; }
  BackendTraits traits() const override {
    BackendTraits t;
    t.parallelism = Parallelism::kDistributed;
    t.cpu_threads = true;
    t.knobs = kKnobBucket | kKnobNoOverlap | kKnobDeterministic;
    t.scaling_base = "cpu-omp";
    return t;
  }
  Availability availability() const override { return {true, ""}; }
  Availability availability_for(const RunConfig& c) const override {
    if (c.deterministic && kLeaves % c.world_size != 0) {
      return {false, "--deterministic: the world size " + std::to_string(c.world_size) + " does not divide the " +
                         std::to_string(kLeaves) + " leaves of a batch"};
    }
    return {true, ""};
  }
  std::unique_ptr<Trainer> make_trainer(const Dataset& data, const TrainOptions& opt, Job& job) const override {
    if (!job.world()) throw std::logic_error("cpu-ddp needs an MPI job (make_job)");
    return std::make_unique<CpuDdpTrainer>(data, opt, job.world());
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_ddp_backend() { return std::make_unique<CpuDdpBackend>(); }

}  // namespace tb
