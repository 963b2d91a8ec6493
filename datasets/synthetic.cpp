// datasets/synthetic.cpp — row-pure synthetic regression / classification data.
// Shapes: N rows, D features, O outputs (regression) or K = O classes.
// Every value is a function of (seed, stream, row, col) only (datasets/philox.h);
// outputs are accumulated in double in a fixed order (i = 0..D-1) and then cast,
// so any split of the rows, over threads or ranks, gives the same bytes.
#include "datasets/synthetic.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/philox.h"

namespace tb {

namespace {

// The task a synthetic spec produces: an explicit kind wins; plain "synthetic"
// uses spec.task, which the caller resolved from the model.
Task synthetic_task(const DatasetSpec& spec) {
  if (spec.kind == "synthetic-regression") return Task::kRegression;
  if (spec.kind == "synthetic-classification") return Task::kClassification;
  return spec.task;
}

void validate(const DatasetSpec& spec, Task task) {
  if (spec.kind != "synthetic" && spec.kind != "synthetic-regression" &&
      spec.kind != "synthetic-classification") {
    throw std::invalid_argument("synthetic data: spec kind is '" + spec.kind + "', not synthetic");
  }
  if (spec.n <= 0 || spec.d <= 0 || spec.o <= 0) {
    throw std::invalid_argument("synthetic data: n, d and o must be > 0 (got n=" + std::to_string(spec.n) +
                                ", d=" + std::to_string(spec.d) + ", o=" + std::to_string(spec.o) + ")");
  }
  if (task == Task::kClassification && spec.o < 2) {
    throw std::invalid_argument("synthetic classification needs o >= 2 classes (got " + std::to_string(spec.o) +
                                ")");
  }
  if (!std::isfinite(spec.noise) || spec.noise < 0.0f) {
    throw std::invalid_argument("synthetic data: noise must be finite and >= 0");
  }
}

// The teacher: regression W* (D x O) and b* (O); classification T (D x K) and c (K).
// Stored as double; classification's T is rounded to float first (as specified),
// so a float twin that recomputes it gets exactly the same teacher.
struct Teacher {
  std::vector<double> w;  // d * o, row-major
  std::vector<double> b;  // o
};

Teacher make_teacher(const DatasetSpec& spec, Task task) {
  const int64_t d = spec.d, o = spec.o;
  Teacher t;
  t.w.resize(static_cast<size_t>(d * o));
  t.b.resize(static_cast<size_t>(o));
  if (task == Task::kRegression) {
    const double sqrt_d = std::sqrt(static_cast<double>(d));
    for (int64_t i = 0; i < d; ++i)
      for (int64_t k = 0; k < o; ++k)
        t.w[i * o + k] = static_cast<double>(uniform_at(spec.seed, kStreamTeacherW, i, k, -1.0f, 1.0f)) / sqrt_d;
    for (int64_t k = 0; k < o; ++k) t.b[k] = uniform_at(spec.seed, kStreamTeacherB, 0, k, -1.0f, 1.0f);
  } else {
    for (int64_t i = 0; i < d; ++i)
      for (int64_t k = 0; k < o; ++k)
        t.w[i * o + k] = static_cast<float>(normal_at(spec.seed, kStreamTeacherW, i, k));
    for (int64_t k = 0; k < o; ++k) t.b[k] = uniform_at(spec.seed, kStreamTeacherB, 0, k, -0.5f, 0.5f);
  }
  return t;
}

// Fills `rows` rows into x (rows x D) and y (rows x O) or labels (rows); local row i
// is global row row_of(i). The one loop every public generator goes through.
template <class RowOf>
void fill_rows(const DatasetSpec& spec, Task task, int64_t rows, RowOf row_of, float* x, float* y, int32_t* labels) {
  if (rows == 0) return;
  if (x == nullptr || (task == Task::kRegression ? y == nullptr : labels == nullptr)) {
    throw std::invalid_argument(std::string("synthetic data: null output buffer (x and ") +
                                (task == Task::kRegression ? "y" : "labels") + " are required)");
  }
  const int64_t d = spec.d, o = spec.o;
  const uint64_t seed = spec.seed;
  const double noise = spec.noise;
  const Teacher teacher = make_teacher(spec, task);
  const double* w = teacher.w.data();
  const double* b = teacher.b.data();

  // Rows are independent and pure, so the thread count cannot change the bytes.
#pragma omp parallel if (rows * (d + 1) * o > (1 << 15))
  {
    std::vector<double> acc(static_cast<size_t>(o));
#pragma omp for schedule(static)
    for (int64_t local = 0; local < rows; ++local) {
      const uint64_t r = static_cast<uint64_t>(row_of(local));
      float* xr = x + local * d;
      for (int64_t i = 0; i < d; ++i) xr[i] = uniform_at(seed, kStreamFeatures, r, i, -1.0f, 1.0f);
      for (int64_t k = 0; k < o; ++k) acc[k] = b[k];
      for (int64_t i = 0; i < d; ++i) {
        const double xi = xr[i];
        const double* wi = w + i * o;
        for (int64_t k = 0; k < o; ++k) acc[k] += xi * wi[k];
      }
      if (task == Task::kRegression) {
        float* yr = y + local * o;
        for (int64_t k = 0; k < o; ++k) {
          const double eps = noise == 0.0 ? 0.0 : noise * normal_at(seed, kStreamNoise, r, k);
          yr[k] = static_cast<float>(acc[k] + eps);
        }
      } else {
        int64_t best = 0;  // ties go to the lowest class index
        for (int64_t k = 1; k < o; ++k)
          if (acc[k] > acc[best]) best = k;
        labels[local] = static_cast<int32_t>(best);
      }
    }
  }
}

// An empty dataset of the spec's shape with room for `rows` rows.
Dataset empty_synthetic(const DatasetSpec& spec, Task task, int64_t rows) {
  Dataset ds;
  ds.task = task;
  ds.n = spec.n;
  ds.d = spec.d;
  ds.o = spec.o;
  ds.x.resize(static_cast<size_t>(rows * spec.d));
  if (task == Task::kRegression) {
    ds.y.resize(static_cast<size_t>(rows * spec.o));
  } else {
    ds.labels.resize(static_cast<size_t>(rows));
  }
  ds.description = synthetic_description(spec);
  return ds;
}

float* or_null(std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }
int32_t* or_null(std::vector<int32_t>& v) { return v.empty() ? nullptr : v.data(); }

}  // namespace

void generate_rows(const DatasetSpec& spec, int64_t row_begin, int64_t row_end, float* x, float* y,
                   int32_t* labels) {
  const Task task = synthetic_task(spec);
  validate(spec, task);
  if (row_begin < 0 || row_end < row_begin || row_end > spec.n) {
    throw std::invalid_argument("generate_rows: rows [" + std::to_string(row_begin) + ", " +
                                std::to_string(row_end) + ") not within [0, " + std::to_string(spec.n) + ")");
  }
  fill_rows(spec, task, row_end - row_begin, [row_begin](int64_t i) { return row_begin + i; }, x, y, labels);
}

std::string synthetic_description(const DatasetSpec& spec) {
  const Task task = synthetic_task(spec);
  std::ostringstream desc;
  desc << "synthetic-" << task_name(task) << "(seed=" << spec.seed;
  if (task == Task::kRegression) desc << ",noise=" << spec.noise;
  desc << ")";
  return desc.str();
}

Dataset make_synthetic(const DatasetSpec& spec) {
  const Task task = synthetic_task(spec);
  validate(spec, task);
  Dataset ds = empty_synthetic(spec, task, spec.n);
  generate_rows(spec, 0, spec.n, ds.x.data(), or_null(ds.y), or_null(ds.labels));
  return ds;
}

Dataset make_synthetic_rows(const DatasetSpec& spec, std::vector<int64_t> rows) {
  const Task task = synthetic_task(spec);
  validate(spec, task);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= spec.n || (i > 0 && rows[i] <= rows[i - 1])) {
      throw std::invalid_argument("make_synthetic_rows: rows must be ascending, distinct and within [0, " +
                                  std::to_string(spec.n) + ") (row " + std::to_string(rows[i]) + " at " +
                                  std::to_string(i) + ")");
    }
  }
  const int64_t count = static_cast<int64_t>(rows.size());
  Dataset ds = empty_synthetic(spec, task, count);
  const int64_t* ids = rows.data();
  fill_rows(spec, task, count, [ids](int64_t i) { return ids[i]; }, ds.x.data(), or_null(ds.y), or_null(ds.labels));
  ds.subset = true;
  ds.row_ids = std::move(rows);
  return ds;
}

}  // namespace tb
