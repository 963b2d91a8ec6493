// kernels/cpu/elementwise.cpp — fused elementwise and reduction ops for float32
// training on the CPU (OpenMP + SIMD); the cpu-omp backend's twins of
// kernels/cuda/elementwise.cu. B rows (batch shard), N columns (layer width),
// K classes. Per-element math is tb:: in kernels/scalar_math.h, so every element
// equals the scalar template's float result whatever the thread count.
#include "kernels/cpu/elementwise.h"

#include <omp.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/scalar_math.h"

namespace tb::cpu {
namespace {

// These ops move a few bytes per flop; below ~32K elements an OpenMP fork/join
// (a few microseconds) costs more than the loop itself.
constexpr int64_t kParallelMinElems = int64_t{1} << 15;

// column_sum gives each thread a contiguous range of columns and walks it in blocks
// of this many columns: the block's double accumulators (8 KiB) stay in L1 while
// every row contributes one contiguous segment of up to 4 KiB.
constexpr int64_t kColumnBlock = 1024;

// Whether `work` elements are worth a parallel region. Small cases skip the region
// entirely: even with a false if() clause, entering one costs ~0.2 us in libgomp,
// more than these loops take on a 256 x 10 tensor.
bool go_parallel(int64_t work) { return work >= kParallelMinElems && omp_get_max_threads() > 1; }

// Calls body(begin, end) on contiguous, static slices of [0, n), one per thread.
template <class Body>
void for_range(int64_t n, int64_t work, const Body& body) {
  if (!go_parallel(work)) {
    body(int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    body(n * t / nt, n * (t + 1) / nt);
  }
}

// As for_range, for bodies returning a partial sum; returns the total (combined in
// whatever order the OpenMP reduction picks).
template <class Body>
double sum_range(int64_t n, int64_t work, const Body& body) {
  if (!go_parallel(work)) return body(int64_t{0}, n);
  double total = 0.0;
#pragma omp parallel reduction(+ : total)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    total += body(n * t / nt, n * (t + 1) / nt);
  }
  return total;
}

}  // namespace

// z (B x N) += bias; z = relu(z) if relu.
void bias_act_forward(float* z, const float* bias, int64_t rows, int64_t cols, bool relu) {
  for_range(rows, rows * cols, [=](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* z_row = z + r * cols;
      if (relu) {
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) z_row[c] = tb::relu(z_row[c] + bias[c]);
      } else {
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) z_row[c] += bias[c];
      }
    }
  });
}

// grad (B x N) = relu'(a) * grad, elementwise over the contiguous B*N block.
void relu_backward(float* grad, const float* a, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for_range(n, n, [=](int64_t i0, int64_t i1) {
#pragma omp simd
    for (int64_t i = i0; i < i1; ++i) grad[i] = tb::relu_backward(grad[i], a[i]);
  });
}

// db (N) = sum over B rows of g (B x N). Each column is accumulated in double in row
// order by exactly one thread, so the result does not depend on the thread count.
void column_sum(const float* g, int64_t rows, int64_t cols, float* db) {
  for_range(cols, rows * cols, [=](int64_t c_begin, int64_t c_end) {
    for (int64_t c0 = c_begin; c0 < c_end; c0 += kColumnBlock) {
      const int64_t w = std::min(kColumnBlock, c_end - c0);
      double acc[kColumnBlock];
      std::fill(acc, acc + w, 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        const float* g_row = g + r * cols + c0;
#pragma omp simd
        for (int64_t c = 0; c < w; ++c) acc[c] += static_cast<double>(g_row[c]);
      }
      for (int64_t c = 0; c < w; ++c) db[c0 + c] = static_cast<float>(acc[c]);
    }
  });
}

// MSE over y, t (B x O): grad = 2 (y - t) inv_count (skipped when grad == nullptr);
// returns sum (y - t)^2 accumulated in double (the sum order may vary with threads).
double mse_loss_grad(const float* y, const float* t, int64_t rows, int64_t cols, float inv_count,
                     float* grad) {
  const int64_t n = rows * cols;
  return sum_range(n, n, [=](int64_t i0, int64_t i1) {
    double sum = 0.0;
    if (grad != nullptr) {
#pragma omp simd reduction(+ : sum)
      for (int64_t i = i0; i < i1; ++i) {
        float g;
        sum += static_cast<double>(tb::mse_element(y[i], t[i], inv_count, &g));
        grad[i] = g;
      }
    } else {
#pragma omp simd reduction(+ : sum)
      for (int64_t i = i0; i < i1; ++i) {
        float g;  // evaluation only: the gradient is discarded
        sum += static_cast<double>(tb::mse_element(y[i], t[i], inv_count, &g));
      }
    }
    return sum;
  });
}

// Softmax cross-entropy over z (B x K) and labels (B), one row at a time.
// Returns sum of -log p[label] in double; dz (B x K) = (softmax - onehot) * inv_rows.
double softmax_xent_loss_grad(const float* z, const int32_t* labels, int64_t rows, int64_t k,
                              float inv_rows, float* dz, int64_t* correct) {
  if (k <= 0 && rows > 0)
    throw std::invalid_argument("tb::cpu::softmax_xent_loss_grad: k = " + std::to_string(k));
  // Validate labels first: an out-of-range label would read outside the row, and an
  // exception cannot leave a parallel region.
  for (int64_t r = 0; r < rows; ++r) {
    if (labels[r] < 0 || labels[r] >= k)
      throw std::invalid_argument("tb::cpu::softmax_xent_loss_grad: label " +
                                  std::to_string(labels[r]) + " of row " + std::to_string(r) +
                                  " is outside [0, " + std::to_string(k) + ")");
  }
  auto rows_loop = [=](int64_t r0, int64_t r1, double& loss, int64_t& hits) {
    for (int64_t r = r0; r < r1; ++r) {
      int argmax = 0;
      const float row_loss = tb::softmax_xent_row(z + r * k, static_cast<int>(k),
                                                  static_cast<int>(labels[r]), inv_rows,
                                                  dz != nullptr ? dz + r * k : nullptr, &argmax);
      loss += static_cast<double>(row_loss);
      hits += argmax == labels[r] ? 1 : 0;
    }
  };
  double loss = 0.0;
  int64_t hits = 0;
  // An exp per element (two with dz) outweighs a simple element op ~16x.
  if (!go_parallel(16 * rows * k)) {
    rows_loop(0, rows, loss, hits);
  } else {
#pragma omp parallel reduction(+ : loss, hits)
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      rows_loop(rows * t / nt, rows * (t + 1) / nt, loss, hits);
    }
  }
  if (correct != nullptr) *correct = hits;
  return loss;
}

// SGD with momentum and weight decay, torch.optim.SGD semantics (see tb::sgd_element).
void sgd_update(float* p, const float* g, float* v, int64_t n, float lr, float momentum,
                float weight_decay) {
  if (momentum == 0.0f) {
    // No momentum buffer: a literal 0 lets the compiler drop the buffer branch.
    for_range(n, n, [=](int64_t i0, int64_t i1) {
#pragma omp simd
      for (int64_t i = i0; i < i1; ++i) {
        float unused = 0.0f;
        tb::sgd_element(&p[i], g[i], &unused, lr, 0.0f, weight_decay);
      }
    });
    return;
  }
  if (v == nullptr)
    throw std::invalid_argument("tb::cpu::sgd_update: momentum != 0 needs a momentum buffer v");
  for_range(n, n, [=](int64_t i0, int64_t i1) {
#pragma omp simd
    for (int64_t i = i0; i < i1; ++i) tb::sgd_element(&p[i], g[i], &v[i], lr, momentum, weight_decay);
  });
}

}  // namespace tb::cpu
