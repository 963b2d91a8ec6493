// harness/backends/cpu_ddp.cpp — `cpu-ddp`: DistributedDataParallel semantics over
// MPI, one process per rank (launched by mpirun/srun), T OpenMP threads each: a
// CpuModel (harness/backends/cpu_model.h) + the MPI GradReducer (grad_reducer.h), the CPU twin
// of cuda-ddp's CudaModel + NCCL reducer. B rows per global batch, P parameters.
//
// Per step: rank r trains its shard (ddp_plan.h shard_of) with gradients scaled by
// 1/B, so the sum over ranks is the global-batch mean; backward hands each finished
// layer to the reducer, which all-reduces buckets as they fill (or all after backward
// with --no-overlap); every rank applies the same SGD update. The step loss is summed
// over ranks, so a non-finite loss stops every rank at the same step. --deterministic:
// fixed leaves and a fixed reduction tree instead. Only rank 0 writes results; times
// are max over ranks.
#include <memory>
#include <stdexcept>
#include <string>

#include "harness/backend.h"
#include "harness/ddp_plan.h"
#include "harness/fault_plan.h"

#if defined(TB_HAVE_MPI)
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "harness/backend.h"
#include "harness/backends/grad_reducer.h"
#include "harness/comm/mpi_session.h"
#include "harness/backends/cpu_model.h"
#include "harness/backends/step_trainer.h"
#include "harness/ddp_plan.h"
#include "harness/fault_plan.h"
#include "harness/rank_data.h"

namespace tb {
namespace {

class CpuDdpTrainer final : public StepTrainer {
 public:
  CpuDdpTrainer(const Dataset& data, const RunConfig& cfg, std::shared_ptr<Communicator> comm)
      : cfg_(cfg), sgd_(sgd_of(cfg)), comm_(std::move(comm)), data_(data),
        // A shard has at most ceil(B / world) rows.
        model_(cfg.model, data, (cfg.batch + comm_->size() - 1) / comm_->size()),
        reducer_(make_mpi_grad_reducer(*comm_, cfg)), fault_(fault_from_env()) {
    reducer_->bind(GradBuffer{model_.grads().data(), nullptr}, model_.layout());
    fault_.at_setup(comm_->rank());
    if (cfg.deterministic) {
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
    model_.set_params(params);
    comm_->broadcast(model_.params().data(), static_cast<int64_t>(params.size()), 0);  // rank 0's copy wins
  }
  std::vector<float> params() const override { return model_.params(); }
  std::string precision() const override { return "fp32"; }
  int64_t allreduce_bytes_per_step() const override { return reducer_->bytes_per_step(); }
  // --deterministic gathers every leaf's gradient (kLeaves x 4P bytes on each rank) instead
  // of all-reducing one: all-gather bus bytes, (n-1)/n of the gathered result.
  double bus_bytes_per_step(int n) const override {
    if (!cfg_.deterministic) return StepTrainer::bus_bytes_per_step(n);
    return n > 1 ? static_cast<double>(n - 1) / n * kLeaves * static_cast<double>(allreduce_bytes_per_step()) : 0;
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
    omp_set_num_threads(cfg_.threads);
    reducer_->begin_epoch(plan.num_batches);
    const EpochResult r = StepTrainer::train_epoch(plan, on_step);
    busy_s_ += reducer_->epoch_busy_seconds();
    return r;
  }

  // Each rank evaluates its rows (rank_data.h eval_ranges); sums are combined. Also checks that
  // every rank ended with the same parameters.
  EvalResult evaluate() override {
    omp_set_num_threads(cfg_.threads);
    double loss_sum = 0;
    int64_t hits = 0;
    for (const Shard& r : eval_ranges(data_, cfg_.batch, comm_->rank(), comm_->size())) {
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
  // An exception here ends the whole job through the runner's one abort path (the
  // other ranks are, or soon will be, waiting for this one in a collective).
  double step(int64_t s, const int64_t* rows, int64_t count) override {
    ++steps_;
    return step_or_throw(s, rows, count);
  }

 private:
  // Step s on this rank's shard of the global batch rows[0, count).
  double step_or_throw(int64_t s, const int64_t* rows, int64_t count) {
    fault_.before_step(comm_->rank(), steps_);
    if (cfg_.deterministic) return deterministic_step(rows, count);
    Stopwatch sw;
    const Shard sh = shard_of(count, comm_->rank(), comm_->size());
    const int64_t local = sh.end - sh.begin;
    double loss_sum = 0;
    if (local > 0) {
      const BatchView bv = model_.load_batch(rows + sh.begin, local);
      if (bv.gathered) phases_.transfer_s += sw.lap();
      const bool fused = model_.has_fused_step();  // linear regression: one pass, as cpu-omp
      if (fused) {
        loss_sum = model_.fused_step(bv, local, count);  // one layer: its one bucket goes in finish()
      } else {
        model_.forward(bv.x, local);
        loss_sum = model_.loss(bv, local, count, true, nullptr);
      }
      if (fault_.nan_at(comm_->rank(), steps_)) loss_sum = std::numeric_limits<double>::quiet_NaN();
      phases_.forward_s += sw.lap();
      if (!fused) {
        model_.backward(bv.x, local, [this, s](int layer) { reducer_->layer_ready(s, layer); });
        const double polled = reducer_->take_progress_seconds();  // MPI progress: communication
        phases_.comm_s += polled;
        phases_.backward_s += sw.lap() - polled;
      }
    } else {
      // An empty shard (global batch smaller than the world) contributes zero.
      std::fill(model_.grads().begin(), model_.grads().end(), 0.0f);
      sw.lap();
    }
    // Exposed communication: what is left of the gradient buckets (the reducer counts
    // those as busbw's t), then the 8-byte loss sum (not all-reduce bandwidth).
    Stopwatch c;
    reducer_->finish(s);
    double loss = loss_sum;
    comm_->allreduce_sum(&loss, 1);
    ++busy_steps_;
    phases_.comm_s += c.seconds();
    sw.lap();
    model_.update(sgd_);
    phases_.optimizer_s += sw.lap();
    // The per-row mean over the global batch; the base class checks it is finite.
    return loss / static_cast<double>(count);
  }

  // --deterministic: this rank's leaves one by one, then every leaf gradient on
  // every rank, added in the fixed tree (ddp_plan.h). Bitwise equal for any world
  // size dividing kLeaves, at the price of an all-gather of kLeaves x P floats.
  double deterministic_step(const int64_t* rows, int64_t count) {
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
      leaf_loss_[k] = model_.loss(bv, local, count, true, nullptr);
      if (fault_.nan_at(comm_->rank(), steps_)) leaf_loss_[k] = std::numeric_limits<double>::quiet_NaN();
      phases_.forward_s += sw.lap();
      model_.backward(bv.x, local);
      std::copy(grads.begin(), grads.end(), out);
      phases_.backward_s += sw.lap();
    }
    // busbw's t is the gradients' all-gather; the loss values' (8 bytes a leaf) is exposed
    // communication but not gradient bandwidth, as the loss sum is outside it in step_or_throw.
    Stopwatch c;
    comm_->allgather(leaf_grads_.data(), per_rank * p, all_grads_.data());
    busy_s_ += c.seconds();
    ++busy_steps_;
    comm_->allgather(leaf_loss_.data(), per_rank, all_loss_.data());
    phases_.comm_s += c.seconds();
    sw.lap();
    tree_sum(all_grads_.data(), kLeaves, p);
    tree_sum(all_loss_.data(), kLeaves, 1);
    std::copy(all_grads_.begin(), all_grads_.begin() + p, grads.begin());
    model_.update(sgd_);
    phases_.optimizer_s += sw.lap();
    return all_loss_[0] / static_cast<double>(count);
  }

  RunConfig cfg_;
  Sgd sgd_;
  std::shared_ptr<Communicator> comm_;
  const Dataset& data_;
  CpuModel model_;
  std::unique_ptr<GradReducer> reducer_;  // binds model_'s gradients
  std::vector<float> leaf_grads_, all_grads_;  // deterministic mode: (kLeaves / N) x P and kLeaves x P
  std::vector<double> leaf_loss_, all_loss_;
  Fault fault_;
  int64_t steps_ = 0;
  double busy_s_ = 0, last_busy_s_ = 0;
  int64_t busy_steps_ = 0, last_busy_steps_ = 0;
};

}  // namespace
}  // namespace tb
#endif  // TB_HAVE_MPI

namespace tb {
namespace {

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
  Availability availability() const override {
#if defined(TB_HAVE_MPI)
    return {true, ""};
#else
    return {false, "built without MPI (install openmpi-bin libopenmpi-dev and rebuild)"};
#endif
  }
  Availability availability_for(const RunConfig& c) const override {
    if (const Availability a = availability(); !a.ok) return a;
    if (c.deterministic && kLeaves % c.world_size != 0) {
      return {false, "--deterministic: the world size " + std::to_string(c.world_size) + " does not divide the " +
                         std::to_string(kLeaves) + " leaves of a batch"};
    }
    return {true, ""};
  }
  std::unique_ptr<Trainer> make_trainer(const Dataset& data, const RunConfig& cfg, Job& job) const override {
    if (!job.world()) throw std::logic_error("cpu-ddp needs an MPI job (make_job)");
#if defined(TB_HAVE_MPI)
    return std::make_unique<CpuDdpTrainer>(data, cfg, job.world());
#else
    (void)data;
    (void)cfg;
    throw std::logic_error("cpu-ddp: built without MPI");
#endif
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_ddp_backend() { return std::make_unique<CpuDdpBackend>(); }

}  // namespace tb
