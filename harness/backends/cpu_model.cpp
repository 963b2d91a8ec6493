// harness/cpu_model.cpp — see cpu_model.h. Per step on a batch of B rows: forward
// Z_l = A_{l-1} W_l^T (GEMM NT) with bias and ReLU fused into one pass; loss and
// dZ_L fused; backward dW_l = dZ_l^T A_{l-1} (GEMM TN), db_l = column sums,
// dA_{l-1} = dZ_l W_l (GEMM NN) masked by the ReLU.
#include "harness/backends/cpu_model.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear_step.h"

namespace tb {

bool rows_are_contiguous(const int64_t* rows, int64_t count) {
  for (int64_t i = 1; i < count; ++i) {
    if (rows[i] != rows[0] + i) return false;
  }
  return true;
}

CpuModel::CpuModel(const ModelSpec& m, const Dataset& data, int64_t max_rows)
    : model_(m), data_(data), layout_(make_layout(m)) {
  max_rows_ = std::max(max_rows, std::min(kEvalChunk, data.n));
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

void CpuModel::set_params(const std::vector<float>& params) {
  if (static_cast<int64_t>(params.size()) != layout_.total) {
    throw std::invalid_argument("CpuModel::set_params: " + std::to_string(params.size()) + " values for " +
                                std::to_string(layout_.total) + " parameters");
  }
  std::copy(params.begin(), params.end(), param_data());
  std::fill(velocity_.begin(), velocity_.end(), 0.0f);
}

void CpuModel::bind_params(float* p) {
  bound_ = p;
  std::vector<float>().swap(params_);
}

void CpuModel::update(const Sgd& sgd) {
  cpu::sgd_update(param_data(), grad_.data(), velocity_.data(), layout_.total, sgd.lr, sgd.momentum,
                  sgd.weight_decay);
}

BatchView CpuModel::load_batch(const int64_t* rows, int64_t count) {
  const int64_t D = data_.d, O = data_.o;
  const bool regression = data_.task == Task::kRegression;
  BatchView b;
  if (rows_are_contiguous(rows, count)) {  // unshuffled: read the batch in place
    b.x = data_.x.data() + rows[0] * D;
    if (regression) b.y = data_.y.data() + rows[0] * O;
    else b.labels = data_.labels.data() + rows[0];
    return b;
  }
  // Rows are scattered over the dataset, which no hardware prefetcher predicts: ask
  // for row i + kAhead's lines while row i is copied (D floats, one per cache line).
  // Measured on the small MLP (60k rows, batch 256): transfer_s -25% at 1 thread,
  // -30% at 2 (docs/performance.md, issue #18).
  constexpr int64_t kAhead = 4;
#pragma omp parallel for if (count * D > (1 << 16))
  for (int64_t i = 0; i < count; ++i) {
    if (i + kAhead < count) {
      const float* next = &data_.x[rows[i + kAhead] * D];
      for (int64_t c = 0; c < D; c += 16) __builtin_prefetch(next + c);
    }
    std::memcpy(&x_[i * D], &data_.x[rows[i] * D], sizeof(float) * D);
    if (regression) std::memcpy(&y_[i * O], &data_.y[rows[i] * O], sizeof(float) * O);
    else labels_[i] = data_.labels[rows[i]];
  }
  b.x = x_.data();
  b.y = y_.data();
  b.labels = labels_.data();
  b.gathered = true;
  return b;
}

void CpuModel::forward(const float* x, int64_t count) {
  const int L = model_.num_layers();
  for (int l = 0; l < L; ++l) {
    const LayerView& v = layout_.layers[l];
    const float* a = l == 0 ? x : acts_[l].data();
    float* z = acts_[l + 1].data();
    cpu::gemm(false, true, count, v.out, v.in, 1.0f, a, v.in, param_data() + v.w_offset, v.in, 0.0f, z, v.out);
    cpu::bias_act_forward(z, param_data() + v.b_offset, count, v.out, /*relu=*/l + 1 < L);
  }
}

double CpuModel::loss(const BatchView& b, int64_t count, int64_t global_rows, bool with_grad, int64_t* correct) {
  const int64_t O = data_.o;
  const float* out = acts_.back().data();
  float* g = with_grad ? delta_.data() : nullptr;
  if (data_.task == Task::kRegression) {
    const float inv = 1.0f / static_cast<float>(global_rows * O);
    return cpu::mse_loss_grad(out, b.y, count, O, inv, g) / static_cast<double>(O);
  }
  int64_t hits = 0;
  const double s =
      cpu::softmax_xent_loss_grad(out, b.labels, count, O, 1.0f / static_cast<float>(global_rows), g, &hits);
  if (correct) *correct = hits;
  return s;
}

void CpuModel::backward(const float* x, int64_t count, const std::function<void(int)>& on_layer) {
  for (int l = model_.num_layers() - 1; l >= 0; --l) {
    const LayerView& v = layout_.layers[l];
    const float* a = l == 0 ? x : acts_[l].data();
    cpu::gemm(true, false, v.out, v.in, count, 1.0f, delta_.data(), v.out, a, v.in, 0.0f, &grad_[v.w_offset], v.in);
    cpu::column_sum(delta_.data(), count, v.out, &grad_[v.b_offset]);
    if (on_layer) on_layer(l);
    if (l == 0) break;
    cpu::gemm(false, false, count, v.in, v.out, 1.0f, delta_.data(), v.out, param_data() + v.w_offset, v.in, 0.0f,
              delta_prev_.data(), v.in);
    cpu::relu_backward(delta_prev_.data(), a, count, v.in);
    delta_.swap(delta_prev_);
  }
}

bool CpuModel::has_fused_step() const {
  return model_.num_layers() == 1 && data_.task == Task::kRegression;
}

double CpuModel::fused_step(const BatchView& b, int64_t count, int64_t global_rows) {
  const LayerView& v = layout_.layers[0];
  const float inv = 1.0f / static_cast<float>(global_rows * v.out);
  return cpu::linear_mse_step(b.x, b.y, count, v.in, v.out, param_data() + v.w_offset, param_data() + v.b_offset, inv,
                              &grad_[v.w_offset], &grad_[v.b_offset]) /
         static_cast<double>(v.out);
}

void CpuModel::evaluate_rows(int64_t begin, int64_t end, double* loss_sum, int64_t* hits) {
  *loss_sum = 0;
  *hits = 0;
  const int64_t chunk = std::min(kEvalChunk, max_rows_);
  for (int64_t r0 = begin; r0 < end; r0 += chunk) {
    const int64_t cnt = std::min(chunk, end - r0);
    BatchView b;
    b.x = data_.x.data() + r0 * data_.d;
    if (data_.task == Task::kRegression) b.y = data_.y.data() + r0 * data_.o;
    else b.labels = data_.labels.data() + r0;
    forward(b.x, cnt);
    int64_t h = 0;
    *loss_sum += loss(b, cnt, cnt, false, &h);
    *hits += h;
  }
}

EvalResult CpuModel::evaluate() {
  if (data_.subset) throw std::logic_error("CpuModel::evaluate: the dataset holds only some rows");
  double loss_sum = 0;
  int64_t hits = 0;
  evaluate_rows(0, data_.n, &loss_sum, &hits);
  EvalResult e;
  e.loss = loss_sum / static_cast<double>(data_.n);
  if (data_.task == Task::kClassification) e.accuracy = static_cast<double>(hits) / static_cast<double>(data_.n);
  return e;
}

}  // namespace tb
