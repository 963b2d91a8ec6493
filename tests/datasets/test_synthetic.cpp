// tests/datasets/test_synthetic.cpp — synthetic data: bitwise split invariance
// (chunks and thread counts), the regression teacher recovered by least squares,
// classification labels equal the teacher's argmax and are balanced enough.
// Shapes: N rows, D features, O outputs / K classes.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "datasets/philox.h"
#include "datasets/synthetic.h"

namespace tb {
namespace {

DatasetSpec spec_of(const char* kind, int64_t n, int64_t d, int64_t o, uint64_t seed) {
  DatasetSpec s;
  s.kind = kind;
  s.task = std::strcmp(kind, "synthetic-classification") == 0 ? Task::kClassification : Task::kRegression;
  s.n = n;
  s.d = d;
  s.o = o;
  s.seed = seed;
  s.noise = 0.1f;
  return s;
}

// Generates [0, n) whole and as the given chunks; both must match bitwise.
void check_split(const DatasetSpec& s, const std::vector<int64_t>& cuts) {
  const bool reg = s.kind == "synthetic-regression";
  const Dataset whole = make_synthetic(s);
  std::vector<float> x(static_cast<size_t>(s.n * s.d), -7.0f), y(reg ? static_cast<size_t>(s.n * s.o) : 0, -7.0f);
  std::vector<int32_t> labels(reg ? 0 : static_cast<size_t>(s.n), -7);
  int64_t a = 0;
  std::vector<int64_t> ends = cuts;
  ends.push_back(s.n);
  for (int64_t b : ends) {
    generate_rows(s, a, b, x.data() + a * s.d, reg ? y.data() + a * s.o : nullptr,
                  reg ? nullptr : labels.data() + a);
    a = b;
  }
  ASSERT_EQ(whole.x.size(), x.size());
  EXPECT_EQ(std::memcmp(whole.x.data(), x.data(), x.size() * sizeof(float)), 0);
  if (reg) {
    ASSERT_EQ(whole.y.size(), y.size());
    EXPECT_EQ(std::memcmp(whole.y.data(), y.data(), y.size() * sizeof(float)), 0);
  } else {
    ASSERT_EQ(whole.labels.size(), labels.size());
    EXPECT_EQ(std::memcmp(whole.labels.data(), labels.data(), labels.size() * sizeof(int32_t)), 0);
  }
}

TEST(Synthetic, SplitInvarianceRegression) {
  const DatasetSpec s = spec_of("synthetic-regression", 10007, 13, 3, 5);
  check_split(s, {1, 2, 2, 999, 5000, 10006});  // includes an empty chunk and single rows
  check_split(s, {3333, 6666});
}

TEST(Synthetic, SplitInvarianceClassification) {
  const DatasetSpec s = spec_of("synthetic-classification", 10007, 13, 4, 5);
  check_split(s, {1, 2, 2, 999, 5000, 10006});
  check_split(s, {3333, 6666});
}

TEST(Synthetic, ThreadCountDoesNotChangeBytes) {
  for (const char* kind : {"synthetic-regression", "synthetic-classification"}) {
    const DatasetSpec s = spec_of(kind, 20000, 16, 4, 9);  // large enough to go parallel
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const Dataset one = make_synthetic(s);
    omp_set_num_threads(3);
    const Dataset three = make_synthetic(s);
    omp_set_num_threads(saved);
    EXPECT_EQ(one.x, three.x) << kind;
    ASSERT_EQ(one.y.size(), three.y.size());
    EXPECT_TRUE(one.y.empty() || std::memcmp(one.y.data(), three.y.data(), one.y.size() * sizeof(float)) == 0)
        << kind;
    EXPECT_EQ(one.labels, three.labels) << kind;
  }
}

TEST(Synthetic, FeaturesFollowTheFormula) {
  const DatasetSpec s = spec_of("synthetic-regression", 50, 7, 2, 3);
  const Dataset ds = make_synthetic(s);
  for (int64_t r = 0; r < s.n; ++r)
    for (int64_t i = 0; i < s.d; ++i)
      ASSERT_EQ(ds.x[r * s.d + i], uniform_at(s.seed, kStreamFeatures, r, i, -1.0f, 1.0f));
}

// Solves the (D+1) x (D+1) system A z = b in place by Gauss-Jordan with partial pivoting.
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const size_t m = b.size();
  for (size_t c = 0; c < m; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < m; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    std::swap(a[c], a[p]);
    std::swap(b[c], b[p]);
    for (size_t r = 0; r < m; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (size_t k = c; k < m; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  for (size_t c = 0; c < m; ++c) b[c] /= a[c][c];
  return b;
}

// Least squares on n = 20000 rows with noise 0.1: the standard error of a weight is
// about 0.1 / sqrt(n / 3) ~ 0.0012 and of a bias about 0.0007, so 0.01 is > 8 sd.
TEST(Synthetic, RegressionRecoversTeacherByLeastSquares) {
  const int64_t n = 20000, d = 5, o = 2;
  const DatasetSpec s = spec_of("synthetic-regression", n, d, o, 11);
  const Dataset ds = make_synthetic(s);
  ASSERT_EQ(ds.task, Task::kRegression);
  ASSERT_EQ(ds.y.size(), static_cast<size_t>(n * o));
  const size_t m = d + 1;  // features plus a constant column for the bias
  for (int64_t k = 0; k < o; ++k) {
    std::vector<std::vector<double>> ata(m, std::vector<double>(m, 0.0));
    std::vector<double> aty(m, 0.0);
    for (int64_t r = 0; r < n; ++r) {
      double row[8];
      for (int64_t i = 0; i < d; ++i) row[i] = ds.x[r * d + i];
      row[d] = 1.0;
      const double t = ds.y[r * o + k];
      for (size_t i = 0; i < m; ++i) {
        aty[i] += row[i] * t;
        for (size_t j = 0; j < m; ++j) ata[i][j] += row[i] * row[j];
      }
    }
    const std::vector<double> z = solve(ata, aty);
    for (int64_t i = 0; i < d; ++i) {
      const double w_star = uniform_at(s.seed, kStreamTeacherW, i, k, -1.0f, 1.0f) / std::sqrt(double(d));
      EXPECT_NEAR(z[i], w_star, 0.01) << "W*[" << i << "][" << k << "]";
    }
    const double b_star = uniform_at(s.seed, kStreamTeacherB, 0, k, -1.0f, 1.0f);
    EXPECT_NEAR(z[d], b_star, 0.01) << "b*[" << k << "]";
    // Residual standard deviation is the noise level (0.1) within 5%.
    double sse = 0.0;
    for (int64_t r = 0; r < n; ++r) {
      double pred = z[d];
      for (int64_t i = 0; i < d; ++i) pred += z[i] * ds.x[r * d + i];
      sse += (ds.y[r * o + k] - pred) * (ds.y[r * o + k] - pred);
    }
    EXPECT_NEAR(std::sqrt(sse / n), 0.1, 0.005);
  }
}

TEST(Synthetic, ZeroNoiseIsExactlyLinear) {
  DatasetSpec s = spec_of("synthetic-regression", 100, 4, 1, 2);
  s.noise = 0.0f;
  const Dataset ds = make_synthetic(s);
  for (int64_t r = 0; r < s.n; ++r) {
    double y = uniform_at(s.seed, kStreamTeacherB, 0, 0, -1.0f, 1.0f);
    for (int64_t i = 0; i < s.d; ++i)
      y += double(ds.x[r * s.d + i]) * (uniform_at(s.seed, kStreamTeacherW, i, 0, -1.0f, 1.0f) / std::sqrt(4.0));
    ASSERT_EQ(ds.y[r], static_cast<float>(y)) << "row " << r;
  }
}

TEST(Synthetic, ClassificationLabelsAreTeacherArgmaxAndBalanced) {
  const int64_t n = 20000, d = 20, k = 4;
  const DatasetSpec s = spec_of("synthetic-classification", n, d, k, 3);
  const Dataset ds = make_synthetic(s);
  ASSERT_EQ(ds.task, Task::kClassification);
  ASSERT_EQ(ds.o, k);
  ASSERT_EQ(ds.labels.size(), static_cast<size_t>(n));
  EXPECT_TRUE(ds.y.empty());
  std::vector<int64_t> count(k, 0);
  for (int64_t r = 0; r < n; ++r) {
    int64_t best = 0;
    double best_score = 0.0;
    for (int64_t c = 0; c < k; ++c) {
      double score = uniform_at(s.seed, kStreamTeacherB, 0, c, -0.5f, 0.5f);
      for (int64_t i = 0; i < d; ++i)
        score += double(ds.x[r * d + i]) * double(static_cast<float>(normal_at(s.seed, kStreamTeacherW, i, c)));
      if (c == 0 || score > best_score) {
        best = c;
        best_score = score;
      }
    }
    ASSERT_EQ(ds.labels[r], best) << "row " << r;
    ++count[best];
  }
  for (int64_t c = 0; c < k; ++c) {
    EXPECT_GT(count[c], 0) << "class " << c << " never appears";
    EXPECT_LE(count[c], 3 * n / k) << "class " << c << " has more than 3x its share";
  }
}

TEST(Synthetic, DifferentSeedsGiveDifferentData) {
  for (const char* kind : {"synthetic-regression", "synthetic-classification"}) {
    const Dataset a = make_synthetic(spec_of(kind, 500, 8, 3, 1));
    const Dataset b = make_synthetic(spec_of(kind, 500, 8, 3, 2));
    const Dataset c = make_synthetic(spec_of(kind, 500, 8, 3, 1 + (1ull << 32)));  // high seed bits matter
    EXPECT_NE(a.x, b.x) << kind;
    EXPECT_NE(a.x, c.x) << kind;
    if (a.task == Task::kRegression) {
      EXPECT_NE(a.y, b.y);
    } else {
      EXPECT_NE(a.labels, b.labels);
    }
    const Dataset again = make_synthetic(spec_of(kind, 500, 8, 3, 1));
    EXPECT_EQ(a.x, again.x);
    EXPECT_EQ(a.y, again.y);
    EXPECT_EQ(a.labels, again.labels);
  }
}

TEST(Synthetic, PlainSyntheticUsesTheResolvedTask) {
  DatasetSpec s = spec_of("synthetic-classification", 100, 6, 3, 4);
  s.kind = "synthetic";
  s.task = Task::kClassification;
  const Dataset plain = make_synthetic(s);
  const Dataset expl = make_synthetic(spec_of("synthetic-classification", 100, 6, 3, 4));
  EXPECT_EQ(plain.task, Task::kClassification);
  EXPECT_EQ(plain.labels, expl.labels);
  EXPECT_EQ(plain.description, "synthetic-classification(seed=4)");
  EXPECT_EQ(make_synthetic(spec_of("synthetic-regression", 10, 2, 1, 1)).description,
            "synthetic-regression(seed=1,noise=0.1)");
}

TEST(Synthetic, InvalidSpecsThrow) {
  EXPECT_THROW(make_synthetic(spec_of("synthetic-regression", 0, 3, 1, 1)), std::invalid_argument);
  EXPECT_THROW(make_synthetic(spec_of("synthetic-regression", 10, 0, 1, 1)), std::invalid_argument);
  EXPECT_THROW(make_synthetic(spec_of("synthetic-regression", 10, 3, 0, 1)), std::invalid_argument);
  EXPECT_THROW(make_synthetic(spec_of("synthetic-classification", 10, 3, 1, 1)), std::invalid_argument);
  EXPECT_NO_THROW(make_synthetic(spec_of("synthetic-regression", 10, 3, 1, 1)));
  const DatasetSpec s = spec_of("synthetic-regression", 10, 3, 1, 1);
  std::vector<float> x(100), y(100);
  EXPECT_THROW(generate_rows(s, 5, 11, x.data(), y.data(), nullptr), std::invalid_argument);
  EXPECT_THROW(generate_rows(s, 6, 5, x.data(), y.data(), nullptr), std::invalid_argument);
  EXPECT_THROW(generate_rows(s, 0, 5, x.data(), nullptr, nullptr), std::invalid_argument);
  EXPECT_NO_THROW(generate_rows(s, 4, 4, nullptr, nullptr, nullptr));  // empty range writes nothing
}

// A DDP rank's subset: row i of make_synthetic_rows is bitwise row ids[i] of the whole,
// for both tasks, and local_row maps back (or refuses a row not held).
TEST(Synthetic, SubsetRowsAreBitwiseTheRowsOfTheWhole) {
  for (const char* kind : {"synthetic-regression", "synthetic-classification"}) {
    const DatasetSpec s = spec_of(kind, 257, 9, 4, 11);
    const Dataset whole = make_synthetic(s);
    const std::vector<int64_t> ids = {0, 3, 4, 17, 128, 200, 256};
    const Dataset part = make_synthetic_rows(s, ids);
    ASSERT_TRUE(part.subset);
    EXPECT_EQ(part.n, 257);
    EXPECT_EQ(part.held_rows(), 7);
    EXPECT_EQ(part.description, whole.description);
    for (size_t i = 0; i < ids.size(); ++i) {
      const int64_t r = ids[i];
      EXPECT_EQ(part.local_row(r), static_cast<int64_t>(i));
      EXPECT_EQ(0, std::memcmp(&part.x[i * 9], &whole.x[r * 9], 9 * sizeof(float))) << kind << " row " << r;
      if (part.task == Task::kRegression) {
        EXPECT_EQ(0, std::memcmp(&part.y[i * 4], &whole.y[r * 4], 4 * sizeof(float))) << kind << " row " << r;
      } else {
        EXPECT_EQ(part.labels[i], whole.labels[r]) << kind << " row " << r;
      }
    }
    EXPECT_THROW(part.local_row(5), std::out_of_range);
    EXPECT_THROW(part.local_row(257), std::out_of_range);
    EXPECT_EQ(whole.local_row(5), 5);
    EXPECT_THROW(whole.local_row(-1), std::out_of_range);
  }
}

TEST(Synthetic, SubsetRowsMustBeAscendingDistinctAndInRange) {
  const DatasetSpec s = spec_of("synthetic-regression", 10, 3, 1, 1);
  EXPECT_THROW(make_synthetic_rows(s, {3, 2}), std::invalid_argument);
  EXPECT_THROW(make_synthetic_rows(s, {2, 2}), std::invalid_argument);
  EXPECT_THROW(make_synthetic_rows(s, {-1}), std::invalid_argument);
  EXPECT_THROW(make_synthetic_rows(s, {10}), std::invalid_argument);
  const Dataset none = make_synthetic_rows(s, {});  // a rank may read no row at all
  EXPECT_TRUE(none.subset);
  EXPECT_EQ(none.held_rows(), 0);
  EXPECT_TRUE(none.x.empty());
}

}  // namespace
}  // namespace tb
