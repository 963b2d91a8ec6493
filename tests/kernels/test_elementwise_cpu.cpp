// tests/kernels/test_elementwise_cpu.cpp — the float32 CPU elementwise ops against
// naive loops in double (B rows, N columns, K classes). Tolerances are stated per
// test; "exact" means equal to the scalar_math.h template evaluated in float, which
// is what the kernels promise per element, at any thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/scalar_math.h"
#include "tests/random_vec.h"

namespace tb::cpu {
namespace {

constexpr double kU = 1.0 / (1 << 24);  // float32 unit roundoff

class ThreadScope {
 public:
  explicit ThreadScope(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~ThreadScope() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

using tb::test::random_vec;

// Sizes on both sides of the kernels' parallel threshold (32K elements).
struct Dims {
  int64_t rows, cols;
};
const std::vector<Dims> kDims = {{1, 1}, {3, 7}, {17, 129}, {256, 256}, {1000, 70}};

class ElementwiseCpu : public ::testing::TestWithParam<int> {};  // parameter: threads

// Exact: one float add (and a max with 0) per element, same as the naive loop.
TEST_P(ElementwiseCpu, BiasActForward) {
  ThreadScope threads(GetParam());
  for (const auto [rows, cols] : kDims) {
    for (bool relu : {false, true}) {
      std::vector<float> z = random_vec(rows * cols, 1);
      const std::vector<float> z0 = z, bias = random_vec(cols, 2);
      bias_act_forward(z.data(), bias.data(), rows, cols, relu);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const float pre = z0[r * cols + c] + bias[c];
          ASSERT_EQ(z[r * cols + c], relu ? (pre > 0.0f ? pre : 0.0f) : pre)
              << rows << "x" << cols << " relu=" << relu << " at " << r << "," << c;
        }
    }
  }
}

// Exact: the gradient passes through where a > 0 and is 0 elsewhere.
TEST_P(ElementwiseCpu, ReluBackward) {
  ThreadScope threads(GetParam());
  for (const auto [rows, cols] : kDims) {
    std::vector<float> a = random_vec(rows * cols, 3);
    for (float& v : a) v = v > 0.0f ? v : 0.0f;  // a is a ReLU output: zeros and positives
    std::vector<float> g = random_vec(rows * cols, 4);
    const std::vector<float> g0 = g;
    relu_backward(g.data(), a.data(), rows, cols);
    for (int64_t i = 0; i < rows * cols; ++i)
      ASSERT_EQ(g[i], a[i] > 0.0f ? g0[i] : 0.0f) << "at " << i;
  }
}

// Tolerance: |db - sum_double| <= rows * u * sum |g| (the float32 recursive-sum bound;
// the kernel accumulates in double, so it is well inside). Must also be bitwise
// deterministic across thread counts.
TEST_P(ElementwiseCpu, ColumnSum) {
  ThreadScope threads(GetParam());
  for (const auto [rows, cols] : kDims) {
    const std::vector<float> g = random_vec(rows * cols, 5);
    std::vector<float> db(static_cast<size_t>(cols), -7.0f);  // overwritten, not accumulated
    column_sum(g.data(), rows, cols, db.data());
    for (int64_t c = 0; c < cols; ++c) {
      double sum = 0.0, mag = 0.0;
      for (int64_t r = 0; r < rows; ++r) {
        sum += g[r * cols + c];
        mag += std::fabs(g[r * cols + c]);
      }
      ASSERT_NEAR(db[c], sum, double(rows) * kU * mag + 1e-30) << rows << "x" << cols << " col " << c;
    }
  }
}

TEST(ElementwiseCpuThreads, ColumnSumDeterministic) {
  const int64_t rows = 1000, cols = 300;
  const std::vector<float> g = random_vec(rows * cols, 6, -100.0f, 100.0f);
  std::vector<float> one(cols), two(cols);
  {
    ThreadScope threads(1);
    column_sum(g.data(), rows, cols, one.data());
  }
  {
    ThreadScope threads(2);
    column_sum(g.data(), rows, cols, two.data());
  }
  EXPECT_EQ(one, two);
}

// MSE: grad exactly tb::mse_element in float; vs double, |grad - 2 (y - t) inv_count|
// <= 4u |.|. The loss sums float squares in double: relative error <= 1e-6.
// inv_count = 1 / (global rows * cols) with a shard of fewer rows, as under data
// parallelism, so the gradient scale is the global one, not the shard's.
TEST_P(ElementwiseCpu, MseLossGrad) {
  ThreadScope threads(GetParam());
  for (const auto [rows, cols] : kDims) {
    const int64_t n = rows * cols;
    const std::vector<float> y = random_vec(n, 7, -3.0f, 3.0f), t = random_vec(n, 8, -3.0f, 3.0f);
    const float inv_count = 1.0f / float(4 * rows * cols);  // the global batch is 4 shards
    std::vector<float> grad(static_cast<size_t>(n));
    const double loss = mse_loss_grad(y.data(), t.data(), rows, cols, inv_count, grad.data());
    double ref = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = double(y[i]) - double(t[i]);
      ref += d * d;
      float exact;
      tb::mse_element(y[i], t[i], inv_count, &exact);
      ASSERT_EQ(grad[i], exact) << "at " << i;
      const double g_ref = 2.0 * d * double(inv_count);
      ASSERT_NEAR(grad[i], g_ref, 4 * kU * std::fabs(g_ref) + 1e-30) << "at " << i;
    }
    EXPECT_NEAR(loss, ref, 1e-6 * ref + 1e-30) << rows << "x" << cols;
    EXPECT_NEAR(mse_loss_grad(y.data(), t.data(), rows, cols, inv_count, nullptr), ref,
                1e-6 * ref + 1e-30)
        << "grad == nullptr";
  }
}

// Double-precision twin of tb::softmax_xent_row for one row.
double xent_row_double(const float* z, int64_t k, int label, double inv_rows, double* dz) {
  double zmax = z[0];
  for (int64_t j = 1; j < k; ++j) zmax = std::max(zmax, double(z[j]));
  double sum = 0.0;
  for (int64_t j = 0; j < k; ++j) sum += std::exp(double(z[j]) - zmax);
  for (int64_t j = 0; j < k; ++j)
    dz[j] = (std::exp(double(z[j]) - zmax) / sum - (j == label ? 1.0 : 0.0)) * inv_rows;
  return std::log(sum) - (double(z[label]) - zmax);
}

// Tolerances: each row's float sum of K exponentials has relative error up to ~K u,
// which shifts log_sum by that much and scales every probability by (1 + K u). So
//   dz:   |dz - ref| <= (4u + (K + 4) u p_ref) * inv_rows  (p_ref the double softmax)
//   row:  |sum_j dz_j| <= (K + 4) u * inv_rows
//   loss: |loss - ref| <= 1e-5 |ref| + rows (K + 4) u
// A wrong index, a missing max-subtraction or a wrong scale fails these by far.
void check_xent(const std::vector<float>& z, const std::vector<int32_t>& labels, int64_t rows,
                int64_t k) {
  const float inv_rows = 1.0f / float(rows);
  std::vector<float> dz(static_cast<size_t>(rows * k));
  int64_t correct = -1;
  const double loss =
      softmax_xent_loss_grad(z.data(), labels.data(), rows, k, inv_rows, dz.data(), &correct);
  double ref = 0.0;
  int64_t ref_correct = 0;
  std::vector<double> dz_ref(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    ref += xent_row_double(&z[r * k], k, labels[r], double(inv_rows), dz_ref.data());
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j)
      if (z[r * k + j] > z[r * k + best]) best = j;
    ref_correct += best == labels[r] ? 1 : 0;
    double row_sum = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      ASSERT_TRUE(std::isfinite(dz[r * k + j]));
      const double p_ref = dz_ref[j] / double(inv_rows) + (j == labels[r] ? 1.0 : 0.0);
      ASSERT_NEAR(dz[r * k + j], dz_ref[j], (4 * kU + double(k + 4) * kU * p_ref) * inv_rows)
          << "row " << r << " class " << j;
      row_sum += dz[r * k + j];
    }
    EXPECT_NEAR(row_sum, 0.0, double(k + 4) * kU * inv_rows) << "softmax - onehot sums to 0, row " << r;
  }
  ASSERT_TRUE(std::isfinite(loss));
  EXPECT_NEAR(loss, ref, 1e-5 * std::fabs(ref) + double(rows * (k + 4)) * kU);
  EXPECT_EQ(correct, ref_correct);
  int64_t correct_eval = -1;
  EXPECT_NEAR(softmax_xent_loss_grad(z.data(), labels.data(), rows, k, inv_rows, nullptr,
                                     &correct_eval),
              loss, 1e-9 * std::fabs(loss) + 1e-12)
      << "dz == nullptr";
  EXPECT_EQ(correct_eval, correct);
}

TEST_P(ElementwiseCpu, SoftmaxXentMatchesDouble) {
  ThreadScope threads(GetParam());
  for (const auto [rows, k] : {Dims{1, 1}, Dims{1, 10}, Dims{37, 10}, Dims{4096, 10}, Dims{64, 1000}}) {
    const std::vector<float> z = random_vec(rows * k, 9, -4.0f, 4.0f);
    std::vector<int32_t> labels(static_cast<size_t>(rows));
    std::mt19937 rng(10);
    for (auto& l : labels) l = static_cast<int32_t>(rng() % uint32_t(k));
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(k));
    check_xent(z, labels, rows, k);
  }
}

// Logits of +-1e4 overflow exp() without the max subtraction; the loss must stay
// finite and exact (here: rows whose label is the max cost ~0, others ~2e4).
TEST_P(ElementwiseCpu, SoftmaxXentLargeLogitsStable) {
  ThreadScope threads(GetParam());
  const int64_t rows = 4, k = 3;
  const std::vector<float> z = {1e4f, -1e4f, 0.0f,     //
                                1e4f, 1e4f - 1, 1e4f - 2,  //
                                -1e4f, -1e4f, -1e4f,   //
                                5e3f, -5e3f, 1e4f};
  const std::vector<int32_t> labels = {0, 2, 1, 0};
  check_xent(z, labels, rows, k);
  std::vector<float> dz(rows * k);
  const double loss =
      softmax_xent_loss_grad(z.data(), labels.data(), rows, k, 1.0f, dz.data(), nullptr);
  // Row 0: ~0. Row 1: log(1 + e^-1 + e^-2) + 2. Row 2: log 3. Row 3: 1e4 - 5e3.
  const double expect = 0.0 + (std::log(1 + std::exp(-1.0) + std::exp(-2.0)) + 2.0) +
                        std::log(3.0) + 5e3;
  EXPECT_NEAR(loss, expect, 1e-3);
}

// Correct count: argmax hits, with ties going to the first maximum (as scalar_math does).
TEST_P(ElementwiseCpu, SoftmaxXentCorrectCount) {
  ThreadScope threads(GetParam());
  const int64_t rows = 5000, k = 10;  // above the parallel threshold
  std::vector<float> z(rows * k, 0.0f);
  std::vector<int32_t> labels(rows);
  int64_t expect = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t pred = (r * 7) % k;
    z[r * k + pred] = 2.0f;
    labels[r] = static_cast<int32_t>(r % 3 == 0 ? pred : (pred + 1) % k);
    expect += r % 3 == 0 ? 1 : 0;
  }
  int64_t correct = -1;
  softmax_xent_loss_grad(z.data(), labels.data(), rows, k, 1.0f / rows, nullptr, &correct);
  EXPECT_EQ(correct, expect);

  const std::vector<float> tie = {1.0f, 3.0f, 3.0f};
  const std::vector<int32_t> lab_first = {1}, lab_second = {2};
  softmax_xent_loss_grad(tie.data(), lab_first.data(), 1, 3, 1.0f, nullptr, &correct);
  EXPECT_EQ(correct, 1);
  softmax_xent_loss_grad(tie.data(), lab_second.data(), 1, 3, 1.0f, nullptr, &correct);
  EXPECT_EQ(correct, 0);
}

TEST(ElementwiseCpuEdge, SoftmaxXentRejectsBadLabels) {
  const std::vector<float> z = {0.0f, 1.0f, 2.0f};
  const std::vector<int32_t> bad = {3}, negative = {-1};
  EXPECT_THROW(softmax_xent_loss_grad(z.data(), bad.data(), 1, 3, 1.0f, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(softmax_xent_loss_grad(z.data(), negative.data(), 1, 3, 1.0f, nullptr, nullptr),
               std::invalid_argument);
}

// torch.optim.SGD(lr=0.1, momentum=0.9, weight_decay=0.01), worked by hand for one
// parameter p = 1 with gradients 0.5, -0.25, 1.0:
//   step 1: d = 0.5 + 0.01 * 1 = 0.51;             buf = 0.51;                  p = 0.949
//   step 2: d = -0.25 + 0.01 * 0.949 = -0.24051;   buf = 0.9 * 0.51 + d = 0.21849;  p = 0.927151
//   step 3: d = 1 + 0.01 * 0.927151 = 1.00927151; buf = 0.9 * 0.21849 + d = 1.20591251;
//           p = 0.927151 - 0.1 * 1.20591251 = 0.806559749
// Tolerance 1e-6 (three float steps of O(1) values).
TEST(ElementwiseCpuSgd, MomentumWeightDecayThreeStepsByHand) {
  float p = 1.0f, v = 0.0f;
  for (float g : {0.5f, -0.25f, 1.0f}) sgd_update(&p, &g, &v, 1, 0.1f, 0.9f, 0.01f);
  EXPECT_NEAR(p, 0.806559749, 1e-6);
  EXPECT_NEAR(v, 1.20591251, 1e-6);
}

// The same semantics over a vector, 3 steps, against a double loop; relative 1e-5.
TEST_P(ElementwiseCpu, SgdMomentumWeightDecayMatchesDouble) {
  ThreadScope threads(GetParam());
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{269322}}) {  // 269322: the MLP's size
    for (float momentum : {0.0f, 0.9f}) {
      const float lr = 0.05f, wd = 1e-3f;
      std::vector<float> p = random_vec(n, 11), v(static_cast<size_t>(n), 0.0f);
      std::vector<double> p_ref(p.begin(), p.end()), v_ref(static_cast<size_t>(n), 0.0);
      for (int step = 0; step < 3; ++step) {
        const std::vector<float> g = random_vec(n, 20 + step);
        sgd_update(p.data(), g.data(), momentum != 0.0f ? v.data() : nullptr, n, lr, momentum, wd);
        for (int64_t i = 0; i < n; ++i) {
          double d = double(g[i]) + double(wd) * p_ref[i];
          if (momentum != 0.0f) {
            v_ref[i] = double(momentum) * v_ref[i] + d;  // buf starts at 0: step 1 gives buf = d
            d = v_ref[i];
          }
          p_ref[i] -= double(lr) * d;
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(p[i], p_ref[i], 1e-5 * std::fabs(p_ref[i]) + 1e-6) << "n=" << n << " i=" << i;
        if (momentum != 0.0f) {
          ASSERT_NEAR(v[i], v_ref[i], 1e-5 * std::fabs(v_ref[i]) + 1e-6);
        }
      }
    }
  }
}

TEST(ElementwiseCpuSgd, MomentumWithoutBufferThrows) {
  float p = 1.0f, g = 1.0f;
  EXPECT_THROW(sgd_update(&p, &g, nullptr, 1, 0.1f, 0.9f, 0.0f), std::invalid_argument);
  sgd_update(&p, &g, nullptr, 1, 0.1f, 0.0f, 0.0f);  // plain SGD needs no buffer
  EXPECT_FLOAT_EQ(p, 0.9f);
}

INSTANTIATE_TEST_SUITE_P(Threads, ElementwiseCpu, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "thread";
                         });

}  // namespace
}  // namespace tb::cpu
