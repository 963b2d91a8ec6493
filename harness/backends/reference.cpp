// harness/backends/reference.cpp — `reference`: float64, one thread, no tricks.
// Forward Z_l = A_{l-1} W_l^T + b_l, A_l = relu(Z_l) (not on the last layer);
// backward dW_l = dZ_l^T A_{l-1}, db_l = sum_rows dZ_l, dA_{l-1} = dZ_l W_l.
#include "harness/backends/reference.h"

#include <algorithm>
#include <cmath>

#include "harness/backends/step_trainer.h"
#include "harness/backend.h"
#include "kernels/scalar_math.h"

namespace tb {

ReferenceModel::ReferenceModel(const ModelSpec& model, const Dataset& data)
    : model_(model), layout_(make_layout(model)), data_(data), acts_(model.layers.size()) {}

double ReferenceModel::loss_and_grad(const std::vector<double>& p, const int64_t* rows, int64_t count,
                                     int64_t global_rows, std::vector<double>* grad, int64_t* correct,
                                     PhaseTimes* times) {
  Stopwatch sw;
  const int L = model_.num_layers();
  const int64_t D = model_.in_dim(), O = model_.out_dim();
  for (int l = 0; l <= L; ++l) acts_[l].resize(static_cast<size_t>(count * model_.layers[l]));
  // A_0: the batch rows, widened to double.
  for (int64_t b = 0; b < count; ++b) {
    for (int64_t i = 0; i < D; ++i) acts_[0][b * D + i] = data_.x[rows[b] * D + i];
  }
  // Forward.
  for (int l = 0; l < L; ++l) {
    const LayerView& v = layout_.layers[l];
    const bool hidden = l + 1 < L;
    for (int64_t b = 0; b < count; ++b) {
      for (int64_t o = 0; o < v.out; ++o) {
        double z = p[v.b_offset + o];
        for (int64_t i = 0; i < v.in; ++i) z += acts_[l][b * v.in + i] * p[v.w_offset + o * v.in + i];
        acts_[l + 1][b * v.out + o] = hidden ? relu(z) : z;
      }
    }
  }
  // Loss and dLoss/dZ_L.
  const std::vector<double>& out = acts_[L];
  delta_.assign(static_cast<size_t>(count * O), 0.0);
  double loss_sum = 0;
  int64_t hits = 0;
  if (model_.task == Task::kRegression) {
    const double inv = 1.0 / (static_cast<double>(global_rows) * O);
    for (int64_t b = 0; b < count; ++b) {
      for (int64_t o = 0; o < O; ++o) {
        loss_sum += mse_element(out[b * O + o], static_cast<double>(data_.y[rows[b] * O + o]), inv, &delta_[b * O + o]);
      }
    }
    loss_sum /= static_cast<double>(O);  // per-row mean over outputs
  } else {
    const double inv = 1.0 / static_cast<double>(global_rows);
    for (int64_t b = 0; b < count; ++b) {
      int pred = 0;
      const int label = data_.labels[rows[b]];
      loss_sum += softmax_xent_row(&out[b * O], static_cast<int>(O), label, inv, &delta_[b * O], &pred);
      hits += pred == label;
    }
  }
  if (correct) *correct = hits;
  if (times) times->forward_s += sw.lap();
  if (grad) {
    grad->assign(static_cast<size_t>(layout_.total), 0.0);
    for (int l = L - 1; l >= 0; --l) {
      const LayerView& v = layout_.layers[l];
      const std::vector<double>& a = acts_[l];
      for (int64_t b = 0; b < count; ++b) {
        for (int64_t o = 0; o < v.out; ++o) {
          const double d = delta_[b * v.out + o];
          (*grad)[v.b_offset + o] += d;
          for (int64_t i = 0; i < v.in; ++i) (*grad)[v.w_offset + o * v.in + i] += d * a[b * v.in + i];
        }
      }
      if (l == 0) break;
      // dA_{l-1} = dZ_l W_l, then through the ReLU of layer l-1 (its output is a).
      delta_prev_.assign(static_cast<size_t>(count * v.in), 0.0);
      for (int64_t b = 0; b < count; ++b) {
        for (int64_t i = 0; i < v.in; ++i) {
          double s = 0;
          for (int64_t o = 0; o < v.out; ++o) s += delta_[b * v.out + o] * p[v.w_offset + o * v.in + i];
          delta_prev_[b * v.in + i] = relu_backward(s, a[b * v.in + i]);
        }
      }
      delta_.swap(delta_prev_);
    }
    if (times) times->backward_s += sw.lap();
  }
  return loss_sum / static_cast<double>(count);
}

namespace {

class ReferenceTrainer final : public StepTrainer {
 public:
  ReferenceTrainer(const Dataset& data, const RunConfig& cfg) : data_(data), cfg_(cfg), model_(cfg.model, data) {}

  void set_params(const std::vector<float>& params) override {
    params_.assign(params.begin(), params.end());
    velocity_.assign(params.size(), 0.0);
  }
  std::vector<float> params() const override { return {params_.begin(), params_.end()}; }
  std::string precision() const override { return kOraclePrecision; }

  EvalResult evaluate() override {
    constexpr int64_t kChunk = 1024;
    std::vector<int64_t> rows(kChunk);
    double loss = 0;
    int64_t hits = 0;
    for (int64_t r0 = 0; r0 < data_.n; r0 += kChunk) {
      const int64_t cnt = std::min(kChunk, data_.n - r0);
      for (int64_t i = 0; i < cnt; ++i) rows[i] = r0 + i;
      int64_t h = 0;
      loss += model_.loss_and_grad(params_, rows.data(), cnt, cnt, nullptr, &h) * static_cast<double>(cnt);
      hits += h;
    }
    EvalResult e;
    e.loss = loss / static_cast<double>(data_.n);
    if (data_.task == Task::kClassification) e.accuracy = static_cast<double>(hits) / static_cast<double>(data_.n);
    return e;
  }

 protected:
  double step(int64_t, const int64_t* rows, int64_t count) override {
    const double loss = model_.loss_and_grad(params_, rows, count, count, &grad_, nullptr, &phases_);
    Stopwatch sw;
    for (size_t i = 0; i < params_.size(); ++i) {
      sgd_element(&params_[i], grad_[i], &velocity_[i], cfg_.lr, cfg_.momentum, cfg_.weight_decay);
    }
    phases_.optimizer_s += sw.lap();
    return loss;
  }

 private:
  const Dataset& data_;
  RunConfig cfg_;
  ReferenceModel model_;
  std::vector<double> params_, grad_, velocity_;
};

class ReferenceBackend final : public Backend {
 public:
  std::string name() const override { return "reference"; }
  std::string description() const override { return "CPU, 1 thread, float64 plain loops: the oracle"; }
  BackendTraits traits() const override {
    BackendTraits t;
    t.oracle = true;
    return t;
  }
  Availability availability() const override { return {true, ""}; }
  std::unique_ptr<Trainer> make_trainer(const Dataset& data, const RunConfig& cfg, Job&) const override {
    return std::make_unique<ReferenceTrainer>(data, cfg);
  }
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace tb
