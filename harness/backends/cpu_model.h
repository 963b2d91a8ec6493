// harness/backends/cpu_model.h — CpuModel: a float32 model on the CPU with every buffer allocated
// once (P parameters, gradients and velocity; acts_[l] B x out_l; deltas B x max width):
// forward, loss, backward with a per-layer "gradient ready" callback, SGD, evaluation.
// cpu-omp is this model; cpu-ddp is this model + an MPI GradReducer; cpu-hogwild's workers
// are copies of it whose parameters are bound to one shared buffer. Its GPU twin, with
// the same method names: backends/cuda_model.h. Shapes: B rows, D in, O out, P params.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "datasets/dataset.h"
#include "harness/backend.h"
#include "harness/model.h"

namespace tb {

// Rows per forward pass when evaluating a whole set (CpuModel and CudaModel).
inline constexpr int64_t kEvalChunk = 4096;

// Plain SGD's hyper-parameters (kernels' sgd_update: v = momentum v + g + wd p; p -= lr v).
struct Sgd {
  float lr = 0, momentum = 0, weight_decay = 0;
};
inline Sgd sgd_of(const RunConfig& cfg) {
  return Sgd{static_cast<float>(cfg.lr), static_cast<float>(cfg.momentum), static_cast<float>(cfg.weight_decay)};
}

// Where a batch's inputs and targets live: in place in the dataset when its rows
// are contiguous, else in the model's gather buffers.
struct BatchView {
  const float* x = nullptr;          // B x D
  const float* y = nullptr;          // B x O (regression)
  const int32_t* labels = nullptr;   // B (classification)
  bool gathered = false;             // rows were copied (time counts as transfer)
};

// True when rows are r, r+1, ..., r+count-1: the batch can be read in place.
bool rows_are_contiguous(const int64_t* rows, int64_t count);

class CpuModel {
 public:
  // max_rows: the largest batch (or shard) step() will see.
  CpuModel(const ModelSpec& model, const Dataset& data, int64_t max_rows);

  // The model's own parameter storage (empty once bind_params() moved them elsewhere).
  std::vector<float>& params() { return params_; }
  const std::vector<float>& params() const { return params_; }
  // Replaces the parameters (P, copied into the bound storage when bound) and zeroes
  // the optimizer state.
  void set_params(const std::vector<float>& params);
  // Parameters in storage the model does not own: P floats at p (cpu-hogwild: a shared
  // memory segment other processes update at the same time, without locks). Forward,
  // backward, update and evaluation then read and write p; the own storage is freed.
  void bind_params(float* p);
  float* param_data() { return bound_ ? bound_ : params_.data(); }
  const float* param_data() const { return bound_ ? bound_ : params_.data(); }
  std::vector<float>& grads() { return grad_; }
  const ParamLayout& layout() const { return layout_; }

  BatchView load_batch(const int64_t* rows, int64_t count);
  // acts for layers 1..L from x (count x D).
  void forward(const float* x, int64_t count);
  // Sum over the rows of each row's loss (MSE averaged over outputs); writes
  // dLoss/dZ_L scaled by 1/global_rows when with_grad. *correct: argmax hits.
  double loss(const BatchView& b, int64_t count, int64_t global_rows, bool with_grad, int64_t* correct);
  // Parameter gradients into grads() from dZ_L. on_layer(l) runs as soon as the
  // gradients of layer l (W_l and b_l) are final — last layer first — so a DDP
  // trainer can start reducing them while earlier layers are still computed.
  void backward(const float* x, int64_t count, const std::function<void(int)>& on_layer = {});

  // SGD on params() from grads() (velocity kept here).
  void update(const Sgd& sgd);

  // Whether fused_step() applies: one linear layer, regression (any output count).
  bool has_fused_step() const;
  // forward + loss(with_grad) + backward in one pass over the batch
  // (kernels/cpu/linear_step.h): the same gradients in grads(), acts not stored.
  double fused_step(const BatchView& b, int64_t count, int64_t global_rows);

  // Mean loss and accuracy over the whole dataset (chunks of up to max_rows); the
  // dataset must hold every row.
  EvalResult evaluate();
  // Sum of the per-row losses and the argmax hits over held rows [begin, end)
  // (indices into the dataset's x/y/labels, dataset.h).
  void evaluate_rows(int64_t begin, int64_t end, double* loss_sum, int64_t* hits);

 private:
  ModelSpec model_;
  const Dataset& data_;
  ParamLayout layout_;
  int64_t max_rows_ = 0;
  std::vector<float> x_, y_;
  std::vector<int32_t> labels_;
  std::vector<std::vector<float>> acts_;  // acts_[0] unused: the input is read in place or from x_
  std::vector<float> delta_, delta_prev_, params_, grad_, velocity_;
  float* bound_ = nullptr;  // bind_params(): the parameters live there
};

}  // namespace tb
