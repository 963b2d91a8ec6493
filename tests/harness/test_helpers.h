// tests/harness/test_helpers.h — small builders shared by the harness tests.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "datasets/synthetic.h"
#include "harness/backend.h"
#include "harness/model.h"

namespace tb::test {

inline Dataset synthetic(Task task, int64_t n, int64_t d, int64_t o, uint64_t seed = 3) {
  DatasetSpec s;
  s.kind = task == Task::kRegression ? "synthetic-regression" : "synthetic-classification";
  s.task = task;
  s.n = n;
  s.d = d;
  s.o = o;
  s.seed = seed;
  return make_synthetic(s);
}

inline ModelSpec model(std::vector<int64_t> layers, Task task) {
  ModelSpec m;
  m.kind = layers.size() == 2 ? ModelKind::kLinear : ModelKind::kMlp;
  m.layers = std::move(layers);
  m.task = task;
  return m;
}

// One repetition of `backend` on synthetic regression through layers (D, ..., O) on n
// rows (data seed data_seed), no warm-up, one thread: the runner tests' starting point.
inline RunConfig regression_config(const std::string& backend, std::vector<int64_t> layers, int64_t n,
                                   uint64_t data_seed = 1) {
  RunConfig c;
  c.backend = backend;
  c.data.kind = "synthetic-regression";
  c.data.task = Task::kRegression;
  c.data.n = n;
  c.data.d = layers.front();
  c.data.o = layers.back();
  c.data.seed = data_seed;
  c.model = model(std::move(layers), Task::kRegression);
  c.warmup = 0;
  c.reps = 1;
  c.threads = 1;
  return c;
}

// Max over i of |a_i - b_i| / (|b_i| + floor): relative error with an absolute
// floor for parameters near zero.
inline double max_rel_err(const std::vector<float>& a, const std::vector<float>& b, double floor) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double e = std::abs(double(a[i]) - double(b[i])) / (std::abs(double(b[i])) + floor);
    m = e > m ? e : m;
  }
  return m;
}

// One training case of the backend-against-backend tests (cpu-omp, cpu-hogwild).
struct Case {
  std::vector<int64_t> layers;
  Task task;
  int64_t n, batch;
  int threads;
  bool shuffle;
  double momentum, weight_decay;
};

inline void PrintTo(const Case& c, std::ostream* os) {
  *os << "layers";
  for (int64_t l : c.layers) *os << ' ' << l;
  *os << ", n " << c.n << ", batch " << c.batch << ", threads " << c.threads;
}

}  // namespace tb::test
