// tests/harness/test_host_memory.cpp — host_bytes_needed counts what a run allocates:
// a CPU backend's linear regression step keeps two packed copies of W's shape
// ((D + 1) x O rounded up to 32, kernels/cpu/linear_step_blocked.cpp) beside the 3P of
// parameters, gradients and velocity; a GPU backend, an MLP or the oracle do not.
#include <gtest/gtest.h>

#include <cstdint>

#include "harness/host_memory.h"
#include "harness/model.h"
#include "test_helpers.h"

namespace tb {
namespace {

RunConfig config(const std::string& backend, std::vector<int64_t> layers, Task task) {
  RunConfig c;
  c.backend = backend;
  c.model = test::model(std::move(layers), task);
  c.data.task = task;
  c.data.n = 100;
  c.batch = 10;
  return c;
}

TEST(HostMemory, CpuLinearRegressionCountsTheStepsPackedCopies) {
  const int64_t d = 1024, o = 1000, p = (d + 1) * o;  // P = 1,025,000 parameters
  const int64_t scratch = 2 * (d + 1) * 1024 * 4;    // O rounded up to 32: 1024
  const RunConfig omp = config("cpu-omp", {d, o}, Task::kRegression);
  EXPECT_GE(host_bytes_needed(omp, 1), 3 * p * 4 + scratch);
  // The same model on the GPU backend or the float64 oracle: no such copies on the host.
  EXPECT_EQ(host_bytes_needed(omp, 1) - host_bytes_needed(config("cuda", {d, o}, Task::kRegression), 1), scratch);
  EXPECT_LT(host_bytes_needed(config("reference", {d, o}, Task::kRegression), 1), 3 * p * 8 + scratch);
  // cpu-hogwild: every worker process packs its own.
  RunConfig hog = config("cpu-hogwild", {d, o}, Task::kRegression);
  hog.workers = 3;
  EXPECT_EQ(host_bytes_needed(hog, 1) - host_bytes_needed(omp, 1), 2 * scratch);
}

TEST(HostMemory, MlpsAndClassifiersAddNoStepCopies) {
  for (const RunConfig& c : {config("cpu-omp", {64, 32, 8}, Task::kRegression),
                             config("cpu-omp", {64, 8}, Task::kClassification)}) {
    EXPECT_EQ(host_bytes_needed(c, 1), host_bytes_needed([&] {
                RunConfig g = c;
                g.backend = "cuda";
                return g;
              }(), 1));
  }
}

}  // namespace
}  // namespace tb
