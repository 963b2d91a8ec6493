// harness/backends/reference.h — the float64 oracle: serial, plain loops.
// Every other backend is tested against it. Shapes: B rows of the batch, layer l
// maps in_l -> out_l; activations A_0 = X (B x D) ... A_L (B x O, the output).
#pragma once

#include <cstdint>
#include <vector>

#include "datasets/dataset.h"
#include "harness/model.h"
#include "harness/timing.h"

namespace tb {

class ReferenceModel {
 public:
  ReferenceModel(const ModelSpec& model, const Dataset& data);

  // Mean loss over rows[0, count) at `params`. When grad != nullptr, writes the
  // gradient of (sum of the rows' losses) / normaliser(global_rows) — with
  // global_rows == count that is the gradient of the returned mean loss.
  // *correct (classification) counts argmax hits; *times (if given) accumulates
  // forward (with loss) and backward seconds.
  double loss_and_grad(const std::vector<double>& params, const int64_t* rows, int64_t count,
                       int64_t global_rows, std::vector<double>* grad, int64_t* correct = nullptr,
                       PhaseTimes* times = nullptr);

  const ModelSpec& model() const { return model_; }

 private:
  ModelSpec model_;
  ParamLayout layout_;
  const Dataset& data_;
  std::vector<std::vector<double>> acts_;  // acts_[l]: B x width(l), l = 0..L
  std::vector<double> delta_, delta_prev_; // dLoss/dZ of the current and previous layer
};

}  // namespace tb
