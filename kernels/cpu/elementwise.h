// kernels/cpu/elementwise.h — fused elementwise and reduction ops for float32
// training on the CPU (OpenMP). Shapes: B rows (batch shard), N columns (layer
// width), K classes. Each op's scalar math comes from kernels/scalar_math.h; the
// CUDA twins in kernels/cuda/elementwise.cu have the same names and argument
// order with the stream last.
#pragma once

#include <cstdint>

namespace tb::cpu {

// z (B x N) += bias (N) broadcast over rows; then z = relu(z) if relu.
void bias_act_forward(float* z, const float* bias, int64_t rows, int64_t cols, bool relu);

// grad (B x N) *= [a > 0], a being the ReLU output of the same layer.
void relu_backward(float* grad, const float* a, int64_t rows, int64_t cols);

// db (N) = sum over rows of g (B x N)   (bias gradient; overwrites db).
void column_sum(const float* g, int64_t rows, int64_t cols, float* db);

// MSE over y, t (B x O): grad = 2 (y - t) * inv_count; returns sum of (y - t)^2 in double.
// grad may be nullptr (evaluation only).
double mse_loss_grad(const float* y, const float* t, int64_t rows, int64_t cols, float inv_count,
                     float* grad);

// Softmax cross-entropy over logits z (B x K) and labels (B):
// dz = (softmax - onehot) * inv_rows (dz may be nullptr); returns the sum of
// -log p[label] in double; *correct receives the number of argmax hits.
double softmax_xent_loss_grad(const float* z, const int32_t* labels, int64_t rows, int64_t k,
                              float inv_rows, float* dz, int64_t* correct);

// p -= lr * (momentum buffer of (g + wd p)); v may be nullptr when momentum == 0.
void sgd_update(float* p, const float* g, float* v, int64_t n, float lr, float momentum,
                float weight_decay);

}  // namespace tb::cpu
