// tests/harness/test_batches.cpp — the epoch's batch schedule, checked against a
// hand-written SGD loop that shares no code with the trainers: a short last batch
// is averaged over its true size, and --drop-last skips it. Runs the executable
// (runner + backend) and compares the saved parameters.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "datasets/synthetic.h"
#include "harness/model.h"
#include "harness/params_file.h"

namespace tb {
namespace {

// Linear regression D=3 -> O=1 on the first n rows: plain SGD, batches of `batch`
// rows in order, each step the gradient of the mean squared error over its rows.
std::vector<double> hand_sgd(const Dataset& d, const std::vector<float>& init, int64_t batch, bool drop_last,
                             double lr) {
  std::vector<double> w(init.begin(), init.end());  // w[0..2] weights, w[3] bias
  for (int64_t b0 = 0; b0 < d.n; b0 += batch) {
    const int64_t rows = std::min(batch, d.n - b0);
    if (drop_last && rows < batch) break;
    std::vector<double> g(4, 0.0);
    for (int64_t r = b0; r < b0 + rows; ++r) {
      double pred = w[3];
      for (int i = 0; i < 3; ++i) pred += w[i] * d.x[r * 3 + i];
      const double e = 2.0 * (pred - d.y[r]) / static_cast<double>(rows);
      for (int i = 0; i < 3; ++i) g[i] += e * d.x[r * 3 + i];
      g[3] += e;
    }
    for (int i = 0; i < 4; ++i) w[i] -= lr * g[i];
  }
  return w;
}

class Batches : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(Batches, ShortLastBatchIsMeanOverItsRowsAndDropLastSkipsIt) {
  const auto& [backend, drop_last] = GetParam();
  DatasetSpec spec;
  spec.kind = "synthetic-regression";
  spec.task = Task::kRegression;
  spec.n = 5;
  spec.d = 3;
  spec.o = 1;
  spec.seed = 4;
  const Dataset data = make_synthetic(spec);
  ModelSpec m;
  m.layers = {3, 1};
  const std::vector<double> want = hand_sgd(data, init_params(m, 4), 3, drop_last, 0.1);

  const std::string params = std::string(TB_TEST_TMPDIR) + "/batches-" + backend + (drop_last ? "-drop" : "") + ".p";
  std::filesystem::remove(params);
  const std::string cmd = std::string(TB_TRAINBENCH_EXE) + " run --backend " + backend +
                          " --model linear --layers 3,1 --samples 5 --batch 3 --epochs 1 --warmup 0 --reps 1 "
                          "--lr 0.1 --seed 4 --threads 1 --save-params " + params + (drop_last ? " --drop-last" : "") +
                          " > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::vector<float> got = read_params_file(params);
  ASSERT_EQ(got.size(), 4u);
  // float32 (cpu-omp) vs double: a handful of roundings on O(1) values.
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << backend << " parameter " << i;
  // The two schedules really differ, so the test can tell them apart.
  const std::vector<double> other = hand_sgd(data, init_params(m, 4), 3, !drop_last, 0.1);
  EXPECT_GT(std::fabs(other[3] - want[3]), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Backends, Batches,
                         ::testing::Combine(::testing::Values("reference", "cpu-omp"), ::testing::Bool()),
                         [](const auto& info) {
                           std::string s = std::get<0>(info.param) == "cpu-omp" ? "cpu_omp" : "reference";
                           return s + (std::get<1>(info.param) ? "_drop_last" : "_keep_last");
                         });

}  // namespace
}  // namespace tb
