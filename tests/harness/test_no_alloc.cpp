// tests/harness/test_no_alloc.cpp — "no allocation inside the step": counts every
// operator new in this test binary and trains cpu-omp epochs after a first one
// (which may size thread-local GEMM packing buffers); later epochs allocate nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "datasets/shuffle.h"
#include "harness/backend.h"
#include "test_helpers.h"

namespace {
std::atomic<long> g_allocations{0};
}

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace tb {
namespace {

void expect_no_allocation_in_epochs(bool shuffle, int threads, std::vector<int64_t> layers, Task task) {
  const Dataset data = test::synthetic(task, 1000, layers.front(), layers.back());
  RunConfig opt;
  opt.model = test::model(layers, task);
  opt.batch = 96;  // 1000 = 10 x 96 + 40: the short last batch is exercised too
  opt.lr = 0.05;
  opt.momentum = 0.9;
  opt.threads = threads;
  const long at_start = g_allocations.load();
  std::unique_ptr<Trainer> t = find_backend("cpu-omp")->make_trainer(data, opt);
  ASSERT_GT(g_allocations.load(), at_start) << "the counting operator new is not in effect";
  t->set_params(init_params(opt.model, 1));
  std::vector<int64_t> order;
  epoch_order(1, 0, data.n, shuffle, &order);
  const EpochPlan plan{&order, opt.batch, 11, data.n};
  t->train_epoch(plan, nullptr);  // first epoch: buffers reach their size
  const long before = g_allocations.load();
  for (int e = 0; e < 3; ++e) t->train_epoch(plan, nullptr);
  EXPECT_EQ(g_allocations.load() - before, 0) << "allocations in 3 epochs (shuffle " << shuffle << ", threads "
                                               << threads << ")";
}

TEST(NoAllocation, CpuOmpStepsAllocateNothing) {
  expect_no_allocation_in_epochs(false, 1, {16, 32, 3}, Task::kRegression);
  expect_no_allocation_in_epochs(true, 2, {16, 32, 3}, Task::kRegression);
  expect_no_allocation_in_epochs(true, 2, {16, 24, 5}, Task::kClassification);
}

}  // namespace
}  // namespace tb
