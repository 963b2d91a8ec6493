// harness/backends/cpu_omp.cpp — `cpu-omp`: float32 training on OpenMP threads: one
// CpuModel (harness/backends/cpu_model.h) on the whole batch of B rows. This file is the step
// (gather, forward + loss, backward, SGD) and its phase timing; all buffers are sized
// once in the model: no allocation inside the step. Its GPU twin: backends/cuda.cpp.
#include <omp.h>

#include "harness/backend.h"
#include "harness/backends/cpu_model.h"
#include "harness/backends/step_trainer.h"

namespace tb {
namespace {

class CpuOmpTrainer final : public StepTrainer {
 public:
  CpuOmpTrainer(const Dataset& data, const RunConfig& cfg)
      : cfg_(cfg), sgd_(sgd_of(cfg)), model_(cfg.model, data, cfg.batch) {}

  void set_params(const std::vector<float>& params) override { model_.set_params(params); }
  std::vector<float> params() const override { return model_.params(); }
  std::string precision() const override { return "fp32"; }

  EpochResult train_epoch(const EpochPlan& plan, const StepCallback& on_step) override {
    omp_set_num_threads(cfg_.threads);
    return StepTrainer::train_epoch(plan, on_step);
  }

  EvalResult evaluate() override {
    omp_set_num_threads(cfg_.threads);
    return model_.evaluate();
  }

 protected:
  double step(int64_t, const int64_t* rows, int64_t count) override {
    Stopwatch sw;
    const BatchView b = model_.load_batch(rows, count);
    if (b.gathered) phases_.transfer_s += sw.lap();
    double loss_sum = 0;
    if (model_.has_fused_step()) {
      // Linear regression: one pass over the batch; forward_s holds the backward too.
      loss_sum = model_.fused_step(b, count, count);
      phases_.forward_s += sw.lap();
    } else {
      model_.forward(b.x, count);
      loss_sum = model_.loss(b, count, count, true, nullptr);
      phases_.forward_s += sw.lap();
      model_.backward(b.x, count);
      phases_.backward_s += sw.lap();
    }
    model_.update(sgd_);
    phases_.optimizer_s += sw.lap();
    return loss_sum / static_cast<double>(count);
  }

 private:
  RunConfig cfg_;
  Sgd sgd_;
  CpuModel model_;
};

class CpuOmpBackend final : public Backend {
 public:
  std::string name() const override { return "cpu-omp"; }
  std::string description() const override { return "CPU, OpenMP threads, float32, blocked GEMM + fused kernels"; }
  BackendTraits traits() const override {
    BackendTraits t;
    t.cpu_threads = true;
    return t;
  }
  Availability availability() const override { return {true, ""}; }
  std::unique_ptr<Trainer> make_trainer(const Dataset& data, const RunConfig& cfg, Job&) const override {
    return std::make_unique<CpuOmpTrainer>(data, cfg);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_omp_backend() { return std::make_unique<CpuOmpBackend>(); }

}  // namespace tb
