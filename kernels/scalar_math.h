// kernels/scalar_math.h — the per-element math every backend shares.
// Templated on the value type so the float64 `reference`, the float32 `cpu-omp`
// and the CUDA kernels (kernels/cuda/*_kernels.cuh) evaluate literally the same expressions. Losses follow
// PyTorch's definitions with mean reduction (MSELoss: mean over all B*O elements,
// no 1/2 factor; CrossEntropyLoss: mean over B rows of -log softmax[label]).
#pragma once

#include <cmath>

#include "kernels/hd.h"

namespace tb {

template <class T>
TB_HD T relu(T z) {
  return z > T(0) ? z : T(0);
}

// d relu / dz expressed through the activation a = relu(z): a > 0 <=> z > 0.
template <class T>
TB_HD T relu_backward(T grad_a, T a) {
  return a > T(0) ? grad_a : T(0);
}

// One element of MSE: returns (y - t)^2 and writes d(loss)/dy = 2 (y - t) * inv_count,
// where inv_count = 1 / (global_batch * outputs) so shards of a batch sum exactly.
template <class T>
TB_HD T mse_element(T y, T t, T inv_count, T* grad) {
  const T d = y - t;
  *grad = T(2) * d * inv_count;
  return d * d;
}

// Softmax cross-entropy's per-element parts, given a row's max zmax and
// log_sum = log(sum_k exp(z_k - zmax)): the gradient (softmax(z)_k - [k == label]) *
// inv_rows of one logit, and the row's loss -log softmax(z)_label. The CUDA kernel
// computes zmax and log_sum across a warp, then calls these per element.
template <class T>
TB_HD T softmax_xent_grad(T z, T zmax, T log_sum, bool is_label, T inv_rows) {
  const T p = std::exp(z - zmax - log_sum);
  return (p - (is_label ? T(1) : T(0))) * inv_rows;
}
template <class T>
TB_HD T softmax_xent_loss(T z_label, T zmax, T log_sum) {
  return log_sum - (z_label - zmax);
}

// Softmax cross-entropy of one row of K logits z against `label`.
// Writes dz[k] = (softmax(z)_k - [k == label]) * inv_rows and returns -log softmax(z)_label.
// Stable: subtracts the row max before exponentiating. *argmax receives the predicted class.
template <class T>
TB_HD T softmax_xent_row(const T* z, int k_classes, int label, T inv_rows, T* dz, int* argmax) {
  T zmax = z[0];
  int best = 0;
  for (int k = 1; k < k_classes; ++k) {
    if (z[k] > zmax) {
      zmax = z[k];
      best = k;
    }
  }
  T sum = T(0);
  for (int k = 0; k < k_classes; ++k) sum += std::exp(z[k] - zmax);
  const T log_sum = std::log(sum);
  if (dz != nullptr) {
    for (int k = 0; k < k_classes; ++k) dz[k] = softmax_xent_grad(z[k], zmax, log_sum, k == label, inv_rows);
  }
  *argmax = best;
  return softmax_xent_loss(z[label], zmax, log_sum);
}

// SGD as torch.optim.SGD (dampening 0, no Nesterov): g += wd * p; v = mu * v + g;
// p -= lr * v. With v starting at 0 the first step equals PyTorch's (buf = g).
template <class T>
TB_HD void sgd_element(T* p, T g, T* v, T lr, T momentum, T weight_decay) {
  g += weight_decay * *p;
  if (momentum != T(0)) {
    *v = momentum * *v + g;
    g = *v;
  }
  *p -= lr * g;
}

}  // namespace tb
