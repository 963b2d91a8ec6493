// tests/cuda_trace/trace_shim_exec_kernels.cpp — execute mode's kernels and GEMM: each
// __global__ kernel of kernels/cuda runs as its host twin, fed with exactly the
// arguments its launcher passed (8-byte slots, parameter order). Where kernels/cpu has
// the op (same name, kernels/cpu/*.h), the twin is that op, so a launcher passing the
// wrong size, offset or flag gives different numbers from the CPU backend; the
// remaining kernels (row gathers, C = beta C, the second passes of two-pass sums) are
// loops. Sgemm follows cuBLAS's
// column-major contract independently of kernels/gemm_layout.h, which it thereby checks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/axpy.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/linear_step.h"
#include "trace_shim_exec.h"

namespace tb_trace_shim {

namespace {
template <class T>
T arg(const uint64_t* slots, size_t i) {
  T v;
  std::memcpy(&v, &slots[i], sizeof v);
  return v;
}

void expect_args(const std::string& kernel, size_t nargs, size_t want) {
  if (nargs != want) exec_unsupported((kernel + ": " + std::to_string(nargs) + " arguments, the twin takes " +
                                       std::to_string(want)).c_str());
}

// column_sum_kernel<In, Out>'s contract: out row s (cols) = the column sums of g's rows
// [s R, s R + R) (R = slice_rows) in double, rounded to Out; rows == 0 writes one row of
// zeros. One slice of float into float is tb::cpu::column_sum itself.
template <class In, class Out>
void column_sum_slices(const In* g, int64_t rows, int64_t cols, int64_t slice_rows, Out* out) {
  if constexpr (std::is_same_v<In, float> && std::is_same_v<Out, float>) {
    if (slice_rows >= rows) return tb::cpu::column_sum(g, rows, cols, out);
  }
  const int64_t slices = rows == 0 ? 1 : (rows + slice_rows - 1) / slice_rows;
  for (int64_t s = 0; s < slices; ++s) {
    for (int64_t c = 0; c < cols; ++c) {
      double acc = 0.0;
      for (int64_t r = s * slice_rows; r < std::min(rows, (s + 1) * slice_rows); ++r) acc += double(g[r * cols + c]);
      out[s * cols + c] = static_cast<Out>(acc);
    }
  }
}

// linear_mse_partial_kernel's contract: block k's rows [k R, k R + R) through
// tb::cpu::linear_mse_step into row k of part (O D + O + 1 doubles: dW, db, loss).
void linear_mse_partials(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                         const float* b, float inv_count, int64_t rows_per_block, double* part) {
  std::vector<float> dw(static_cast<size_t>(o * d));
  std::vector<float> db(static_cast<size_t>(o));
  const int64_t width = o * d + o + 1;
  for (int64_t k = 0, r0 = 0; r0 < rows; ++k, r0 += rows_per_block) {
    const int64_t n = std::min(rows_per_block, rows - r0);
    double* row = part + k * width;
    row[o * d + o] = tb::cpu::linear_mse_step(x + r0 * d, t + r0 * o, n, d, o, w, b, inv_count, dw.data(), db.data());
    for (int64_t i = 0; i < o * d; ++i) row[i] = dw[static_cast<size_t>(i)];
    for (int64_t j = 0; j < o; ++j) row[o * d + j] = db[static_cast<size_t>(j)];
  }
}

// linear_mse_finish_kernel's contract: the partial rows of `blocks` blocks summed in
// block order in double, rounded once; the loss added to *loss_sum.
void linear_mse_finish(const double* part, int64_t blocks, int64_t d, int64_t o, float* dw, float* db,
                       double* loss_sum) {
  const int64_t od = o * d, width = od + o + 1;
  for (int64_t c = 0; c < width; ++c) {
    double s = 0.0;
    for (int64_t k = 0; k < blocks; ++k) s += part[k * width + c];
    if (c < od) dw[c] = static_cast<float>(s);
    else if (c < od + o) db[c - od] = static_cast<float>(s);
    else *loss_sum += s;
  }
}

// softmax_xent_kernel's contract: a label outside [0, k) makes that row's loss and dz NaN.
void softmax_xent(const float* z, const int32_t* labels, int64_t rows, int k, float inv_rows, float* dz,
                  double* loss_sum, unsigned long long* correct) {
  double loss = 0.0;
  unsigned long long hits = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float* dz_row = dz != nullptr ? dz + r * k : nullptr;
    if (labels[r] < 0 || labels[r] >= k) {
      loss += std::nan("");
      if (dz_row != nullptr)
        for (int j = 0; j < k; ++j) dz_row[j] = std::nanf("");
      continue;
    }
    int64_t hit = 0;
    loss += tb::cpu::softmax_xent_loss_grad(z + r * k, labels + r, 1, k, inv_rows, dz_row, &hit);
    hits += static_cast<unsigned long long>(hit);
  }
  *loss_sum += loss;
  if (correct != nullptr) *correct += hits;
}
}  // namespace

void run_kernel(const char* kernel, const uint64_t* a, size_t nargs) {
  const std::string k = kernel;
  if (k == "tb::cuda::bias_act_forward_kernel<true>" || k == "tb::cuda::bias_act_forward_kernel<false>") {
    // (z, bias, n = rows * cols, cols)
    expect_args(k, nargs, 4);
    const int64_t n = arg<int64_t>(a, 2), cols = arg<int64_t>(a, 3);
    tb::cpu::bias_act_forward(arg<float*>(a, 0), arg<const float*>(a, 1), n / cols, cols,
                              k.find("<true>") != std::string::npos);
  } else if (k == "tb::cuda::relu_backward_kernel") {  // (grad, a, n)
    expect_args(k, nargs, 3);
    tb::cpu::relu_backward(arg<float*>(a, 0), arg<const float*>(a, 1), 1, arg<int64_t>(a, 2));
  } else if (k == "tb::cuda::column_sum_kernel<float,float>") {  // (g, rows, cols, slice_rows, out)
    expect_args(k, nargs, 5);
    column_sum_slices(arg<const float*>(a, 0), arg<int64_t>(a, 1), arg<int64_t>(a, 2), arg<int64_t>(a, 3),
                      arg<float*>(a, 4));
  } else if (k == "tb::cuda::column_sum_kernel<float,double>") {
    expect_args(k, nargs, 5);
    column_sum_slices(arg<const float*>(a, 0), arg<int64_t>(a, 1), arg<int64_t>(a, 2), arg<int64_t>(a, 3),
                      arg<double*>(a, 4));
  } else if (k == "tb::cuda::column_sum_kernel<double,float>") {
    expect_args(k, nargs, 5);
    column_sum_slices(arg<const double*>(a, 0), arg<int64_t>(a, 1), arg<int64_t>(a, 2), arg<int64_t>(a, 3),
                      arg<float*>(a, 4));
  } else if (k == "tb::cuda::linear_mse_partial_kernel<1024>" || k == "tb::cuda::linear_mse_partial_kernel<8192>") {
    // (x, t, rows, d, o, w, b, inv_count, rows_per_block, part); <W>: O D <= W
    expect_args(k, nargs, 10);
    const int64_t od = arg<int64_t>(a, 3) * arg<int64_t>(a, 4);
    if (od > (k.find("<1024>") != std::string::npos ? 1024 : 8192))
      exec_unsupported((k + ": O x D = " + std::to_string(od) + " exceeds its shared memory").c_str());
    linear_mse_partials(arg<const float*>(a, 0), arg<const float*>(a, 1), arg<int64_t>(a, 2), arg<int64_t>(a, 3),
                        arg<int64_t>(a, 4), arg<const float*>(a, 5), arg<const float*>(a, 6), arg<float>(a, 7),
                        arg<int64_t>(a, 8), arg<double*>(a, 9));
  } else if (k == "tb::cuda::linear_mse_finish_kernel") {  // (part, blocks, d, o, dw, db, loss_sum)
    expect_args(k, nargs, 7);
    linear_mse_finish(arg<const double*>(a, 0), arg<int64_t>(a, 1), arg<int64_t>(a, 2), arg<int64_t>(a, 3),
                      arg<float*>(a, 4), arg<float*>(a, 5), arg<double*>(a, 6));
  } else if (k == "tb::cuda::mse_loss_grad_kernel") {  // (y, t, n, inv_count, grad, loss_sum)
    expect_args(k, nargs, 6);
    *arg<double*>(a, 5) += tb::cpu::mse_loss_grad(arg<const float*>(a, 0), arg<const float*>(a, 1), 1,
                                                  arg<int64_t>(a, 2), arg<float>(a, 3), arg<float*>(a, 4));
  } else if (k == "tb::cuda::softmax_xent_kernel") {  // (z, labels, rows, k, inv_rows, dz, loss_sum, correct)
    expect_args(k, nargs, 8);
    softmax_xent(arg<const float*>(a, 0), arg<const int32_t*>(a, 1), arg<int64_t>(a, 2), arg<int>(a, 3),
                 arg<float>(a, 4), arg<float*>(a, 5), arg<double*>(a, 6), arg<unsigned long long*>(a, 7));
  } else if (k == "tb::cuda::sgd_update_kernel<true>" || k == "tb::cuda::sgd_update_kernel<false>") {
    // (p, g, v, n, lr, momentum, weight_decay); without momentum v is not touched
    expect_args(k, nargs, 7);
    const bool momentum = k.find("<true>") != std::string::npos;
    tb::cpu::sgd_update(arg<float*>(a, 0), arg<const float*>(a, 1), momentum ? arg<float*>(a, 2) : nullptr,
                        arg<int64_t>(a, 3), arg<float>(a, 4), momentum ? arg<float>(a, 5) : 0.0f, arg<float>(a, 6));
  } else if (k == "tb::cuda::gather_rows_kernel") {  // (src, rows, count, width, dst)
    expect_args(k, nargs, 5);
    const float* src = arg<const float*>(a, 0);
    const int64_t* rows = arg<const int64_t*>(a, 1);
    const int64_t count = arg<int64_t>(a, 2), width = arg<int64_t>(a, 3);
    float* dst = arg<float*>(a, 4);
    for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * width, src + rows[i] * width, sizeof(float) * width);
  } else if (k == "tb::cuda::gather_labels_kernel") {  // (src, rows, count, dst)
    expect_args(k, nargs, 4);
    const int32_t* src = arg<const int32_t*>(a, 0);
    const int64_t* rows = arg<const int64_t*>(a, 1);
    int32_t* dst = arg<int32_t*>(a, 3);
    for (int64_t i = 0, n = arg<int64_t>(a, 2); i < n; ++i) dst[i] = src[rows[i]];
  } else if (k == "tb::cuda::append_step_loss_kernel") {  // (sum, losses, next): losses[*next] = *sum; ++*next
    expect_args(k, nargs, 3);
    unsigned long long* next = arg<unsigned long long*>(a, 2);
    arg<double*>(a, 1)[*next] = *arg<const double*>(a, 0);
    ++*next;
  } else if (k == "tb::cuda::add_inplace_kernel") {  // (dst, src, n)
    expect_args(k, nargs, 3);
    tb::cpu::add_inplace(arg<float*>(a, 0), arg<const float*>(a, 1), arg<int64_t>(a, 2));
  } else if (k == "tb::cuda::scale_c_kernel") {  // (c, m, n, ldc, beta): C = beta C, beta == 0 writes zeros
    expect_args(k, nargs, 5);
    float* c = arg<float*>(a, 0);
    const int64_t m = arg<int64_t>(a, 1), n = arg<int64_t>(a, 2), ldc = arg<int64_t>(a, 3);
    const float beta = arg<float>(a, 4);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
  } else {
    exec_unsupported(("no host twin for kernel " + k + " (tests/cuda_trace/trace_shim_exec_kernels.cpp)").c_str());
  }
}

// Column-major: X (rows x cols, ld) element (i, j) is x[i + j * ld]. op(A) is m x k, op(B)
// k x n. Accumulated in double, rounded once (cuBLAS's fp32 order is unspecified).
void run_sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
               int ldb, float beta, float* c, int ldc) {
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double acc = 0.0;
      for (int l = 0; l < k; ++l) {
        const float av = trans_a ? a[l + int64_t(i) * lda] : a[i + int64_t(l) * lda];
        const float bv = trans_b ? b[j + int64_t(l) * ldb] : b[l + int64_t(j) * ldb];
        acc += double(av) * double(bv);
      }
      float& cij = c[i + int64_t(j) * ldc];
      cij = static_cast<float>(alpha * acc + (beta == 0.0f ? 0.0 : double(beta) * double(cij)));
    }
  }
}

}  // namespace tb_trace_shim
