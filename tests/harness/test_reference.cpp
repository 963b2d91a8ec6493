// tests/harness/test_reference.cpp — the float64 oracle is itself checked:
// gradients against central finite differences, and linear regression trained
// to convergence against the closed-form least-squares solution.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "harness/backends/reference.h"
#include "test_helpers.h"

namespace tb {
namespace {

using test::model;
using test::synthetic;

// Central differences with h = 1e-6 in float64 have truncation error O(h^2 * f''')
// and rounding error O(eps / h) ~ 1e-10: a relative agreement of 1e-6 is a real check.
void check_gradient(const ModelSpec& m, const Dataset& data) {
  ReferenceModel ref(m, data);
  const std::vector<float> init = init_params(m, 11);
  std::vector<double> p(init.begin(), init.end()), g;
  std::vector<int64_t> rows = {0, 3, 4, 7, 9, 12, 13};  // an arbitrary, non-contiguous batch
  const auto count = static_cast<int64_t>(rows.size());
  ref.loss_and_grad(p, rows.data(), count, count, &g);
  const double h = 1e-6;
  for (size_t i = 0; i < p.size(); ++i) {
    const double keep = p[i];
    p[i] = keep + h;
    const double up = ref.loss_and_grad(p, rows.data(), count, count, nullptr);
    p[i] = keep - h;
    const double down = ref.loss_and_grad(p, rows.data(), count, count, nullptr);
    p[i] = keep;
    const double fd = (up - down) / (2 * h);
    EXPECT_NEAR(g[i], fd, 1e-6 * std::max(1.0, std::fabs(fd))) << "parameter " << i;
  }
}

TEST(Reference, LinearMseGradientMatchesFiniteDifferences) {
  check_gradient(model({5, 3}, Task::kRegression), synthetic(Task::kRegression, 16, 5, 3));
}

TEST(Reference, MlpMseGradientMatchesFiniteDifferences) {
  check_gradient(model({4, 6, 5, 2}, Task::kRegression), synthetic(Task::kRegression, 16, 4, 2));
}

TEST(Reference, MlpCrossEntropyGradientMatchesFiniteDifferences) {
  check_gradient(model({6, 7, 4}, Task::kClassification), synthetic(Task::kClassification, 16, 6, 4));
}

TEST(Reference, ShardGradientsSumToTheGlobalBatchGradient) {
  // Uneven split 5 + 2 of a global batch of 7: each shard scales by 1/7, so the sum is exact.
  const ModelSpec m = model({4, 5, 3}, Task::kClassification);
  const Dataset data = synthetic(Task::kClassification, 16, 4, 3);
  ReferenceModel ref(m, data);
  const std::vector<float> init = init_params(m, 2);
  const std::vector<double> p(init.begin(), init.end());
  std::vector<int64_t> rows = {1, 2, 3, 5, 8, 13, 14};
  std::vector<double> whole, a, b;
  ref.loss_and_grad(p, rows.data(), 7, 7, &whole);
  ref.loss_and_grad(p, rows.data(), 5, 7, &a);
  ref.loss_and_grad(p, rows.data() + 5, 2, 7, &b);
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(a[i] + b[i], whole[i], 1e-14);
}

// Solves the normal equations [X 1]^T [X 1] w = [X 1]^T y in double (Gaussian elimination).
std::vector<double> least_squares(const Dataset& d) {
  const int64_t k = d.d + 1;
  std::vector<double> A(k * k, 0.0), r(k, 0.0);
  for (int64_t n = 0; n < d.n; ++n) {
    for (int64_t i = 0; i < k; ++i) {
      const double xi = i < d.d ? d.x[n * d.d + i] : 1.0;
      r[i] += xi * d.y[n];
      for (int64_t j = 0; j < k; ++j) A[i * k + j] += xi * (j < d.d ? d.x[n * d.d + j] : 1.0);
    }
  }
  for (int64_t c = 0; c < k; ++c) {
    for (int64_t i = c + 1; i < k; ++i) {
      const double f = A[i * k + c] / A[c * k + c];
      for (int64_t j = c; j < k; ++j) A[i * k + j] -= f * A[c * k + j];
      r[i] -= f * r[c];
    }
  }
  std::vector<double> w(k);
  for (int64_t i = k - 1; i >= 0; --i) {
    double s = r[i];
    for (int64_t j = i + 1; j < k; ++j) s -= A[i * k + j] * w[j];
    w[i] = s / A[i * k + i];
  }
  return w;
}

TEST(Reference, LinearRegressionConvergesToLeastSquares) {
  const Dataset data = synthetic(Task::kRegression, 400, 6, 1, 5);
  const ModelSpec m = model({6, 1}, Task::kRegression);
  const std::vector<double> w_ls = least_squares(data);
  // Full-batch gradient descent on a well-conditioned problem (x ~ U(-1,1), Hessian
  // ~ 2/3 I): 3000 steps at lr 0.5 shrink the error by far more than 1e-9.
  ReferenceModel ref(m, data);
  const std::vector<float> init = init_params(m, 1);
  std::vector<double> p(init.begin(), init.end()), g;
  std::vector<int64_t> rows(static_cast<size_t>(data.n));
  std::iota(rows.begin(), rows.end(), 0);
  for (int it = 0; it < 3000; ++it) {
    ref.loss_and_grad(p, rows.data(), data.n, data.n, &g);
    for (size_t i = 0; i < p.size(); ++i) p[i] -= 0.5 * g[i];
  }
  for (int64_t i = 0; i < 6; ++i) EXPECT_NEAR(p[i], w_ls[i], 1e-8) << "weight " << i;
  EXPECT_NEAR(p[6], w_ls[6], 1e-8) << "bias";
}

}  // namespace
}  // namespace tb
