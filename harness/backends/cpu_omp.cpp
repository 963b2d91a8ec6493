// harness/backends/cpu_omp.cpp — `cpu-omp`: float32 training on OpenMP threads.
// Per step on a batch of B rows: forward Z_l = A_{l-1} W_l^T (GEMM NT) with bias
// and ReLU fused into one pass; loss and dZ_L fused; backward dW_l = dZ_l^T A_{l-1}
// (GEMM TN), db_l = column sums, dA_{l-1} = dZ_l W_l (GEMM NN) masked by the ReLU;
// one SGD pass over the flat parameter buffer. All buffers are sized once, in the
// constructor: no allocation inside the step.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "harness/backend.h"
#include "harness/cpu_trainer_base.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"

namespace tb {
namespace {

constexpr int64_t kEvalChunk = 4096;  // rows per forward pass in evaluate()

class CpuOmpTrainer final : public StepTrainer {
 public:
  CpuOmpTrainer(const Dataset& data, const TrainOptions& opt)
      : data_(data), opt_(opt), layout_(make_layout(opt.model)) {
    const ModelSpec& m = opt.model;
    max_rows_ = std::max(opt.batch, std::min(kEvalChunk, data.n));
    x_.resize(static_cast<size_t>(max_rows_ * m.in_dim()));
    y_.resize(static_cast<size_t>(max_rows_ * m.out_dim()));
    labels_.resize(static_cast<size_t>(max_rows_));
    acts_.resize(m.layers.size());
    for (size_t l = 1; l < m.layers.size(); ++l) acts_[l].resize(static_cast<size_t>(max_rows_ * m.layers[l]));
    delta_.resize(static_cast<size_t>(max_rows_ * m.max_width()));
    delta_prev_.resize(delta_.size());
    params_.resize(static_cast<size_t>(layout_.total));
    grad_.resize(params_.size());
    velocity_.resize(params_.size());
  }

  void set_params(const std::vector<float>& params) override {
    params_ = params;
    std::fill(velocity_.begin(), velocity_.end(), 0.0f);
  }
  std::vector<float> params() const override { return params_; }
  std::string precision() const override { return "fp32"; }

  EpochResult train_epoch(const EpochPlan& plan, const StepCallback& on_step) override {
    omp_set_num_threads(opt_.threads);
    return StepTrainer::train_epoch(plan, on_step);
  }

  EvalResult evaluate() override {
    omp_set_num_threads(opt_.threads);
    double loss = 0;
    int64_t hits = 0;
    for (int64_t r0 = 0; r0 < data_.n; r0 += kEvalChunk) {
      const int64_t cnt = std::min(kEvalChunk, data_.n - r0);
      const float* x = data_.x.data() + r0 * data_.d;
      forward(x, cnt);
      int64_t h = 0;
      loss += loss_and_grad(cnt, cnt, data_.y.data() + r0 * data_.o, data_.labels.data() + r0, false, &h);
      hits += h;
    }
    EvalResult e;
    e.loss = loss / static_cast<double>(data_.n);
    if (data_.task == Task::kClassification) e.accuracy = static_cast<double>(hits) / static_cast<double>(data_.n);
    return e;
  }

 protected:
  double step(const int64_t* rows, int64_t count, int64_t global_rows) override {
    Stopwatch sw;
    const int64_t D = data_.d, O = data_.o;
    const bool regression = data_.task == Task::kRegression;
    const float* x;
    const float* y = nullptr;
    const int32_t* labels = nullptr;
    if (rows_are_contiguous(rows, count)) {  // unshuffled: read the batch in place
      x = data_.x.data() + rows[0] * D;
      if (regression) y = data_.y.data() + rows[0] * O;
      else labels = data_.labels.data() + rows[0];
    } else {  // shuffled: gather the rows (counted as transfer)
#pragma omp parallel for if (count * D > 1 << 16)
      for (int64_t b = 0; b < count; ++b) {
        std::memcpy(&x_[b * D], &data_.x[rows[b] * D], sizeof(float) * D);
        if (regression) std::memcpy(&y_[b * O], &data_.y[rows[b] * O], sizeof(float) * O);
        else labels_[b] = data_.labels[rows[b]];
      }
      x = x_.data();
      y = y_.data();
      labels = labels_.data();
      phases_.transfer_s += sw.lap();
    }
    forward(x, count);
    const double loss_sum = loss_and_grad(count, global_rows, y, labels, true, nullptr);
    phases_.forward_s += sw.lap();
    backward(x, count);
    phases_.backward_s += sw.lap();
    cpu::sgd_update(params_.data(), grad_.data(), velocity_.data(), layout_.total, static_cast<float>(opt_.lr),
                    static_cast<float>(opt_.momentum), static_cast<float>(opt_.weight_decay));
    phases_.optimizer_s += sw.lap();
    return loss_sum / static_cast<double>(count);
  }

 private:
  // acts_[l] (count x out_l) for l = 1..L from x (count x D).
  void forward(const float* x, int64_t count) {
    const int L = opt_.model.num_layers();
    for (int l = 0; l < L; ++l) {
      const LayerView& v = layout_.layers[l];
      const float* a = l == 0 ? x : acts_[l].data();
      float* z = acts_[l + 1].data();
      cpu::gemm(false, true, count, v.out, v.in, 1.0f, a, v.in, &params_[v.w_offset], v.in, 0.0f, z, v.out);
      cpu::bias_act_forward(z, &params_[v.b_offset], count, v.out, /*relu=*/l + 1 < L);
    }
  }

  // Sum over the rows of the per-row loss (MSE averaged over outputs); writes
  // dZ_L into delta_ when with_grad.
  double loss_and_grad(int64_t count, int64_t global_rows, const float* y, const int32_t* labels, bool with_grad,
                       int64_t* correct) {
    const int64_t O = data_.o;
    const float* out = acts_.back().data();
    float* g = with_grad ? delta_.data() : nullptr;
    if (data_.task == Task::kRegression) {
      const float inv = 1.0f / static_cast<float>(global_rows * O);
      return cpu::mse_loss_grad(out, y, count, O, inv, g) / static_cast<double>(O);
    }
    int64_t hits = 0;
    const double s = cpu::softmax_xent_loss_grad(out, labels, count, O, 1.0f / static_cast<float>(global_rows), g, &hits);
    if (correct) *correct = hits;
    return s;
  }

  // Gradients into grad_ from delta_ = dZ_L.
  void backward(const float* x, int64_t count) {
    for (int l = opt_.model.num_layers() - 1; l >= 0; --l) {
      const LayerView& v = layout_.layers[l];
      const float* a = l == 0 ? x : acts_[l].data();
      cpu::gemm(true, false, v.out, v.in, count, 1.0f, delta_.data(), v.out, a, v.in, 0.0f, &grad_[v.w_offset], v.in);
      cpu::column_sum(delta_.data(), count, v.out, &grad_[v.b_offset]);
      if (l == 0) break;
      cpu::gemm(false, false, count, v.in, v.out, 1.0f, delta_.data(), v.out, &params_[v.w_offset], v.in, 0.0f,
                delta_prev_.data(), v.in);
      cpu::relu_backward(delta_prev_.data(), a, count, v.in);
      delta_.swap(delta_prev_);
    }
  }

  const Dataset& data_;
  TrainOptions opt_;
  ParamLayout layout_;
  int64_t max_rows_ = 0;
  std::vector<float> x_, y_;
  std::vector<int32_t> labels_;
  std::vector<std::vector<float>> acts_;  // acts_[0] unused: the input is read in place or from x_
  std::vector<float> delta_, delta_prev_, params_, grad_, velocity_;
};

class CpuOmpBackend final : public Backend {
 public:
  std::string name() const override { return "cpu-omp"; }
  std::string description() const override { return "CPU, OpenMP threads, float32, blocked GEMM + fused kernels"; }
  Availability availability() const override { return {true, ""}; }
  std::unique_ptr<Trainer> make_trainer(const Dataset& data, const TrainOptions& opt) const override {
    return std::make_unique<CpuOmpTrainer>(data, opt);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_omp_backend() { return std::make_unique<CpuOmpBackend>(); }

}  // namespace tb
