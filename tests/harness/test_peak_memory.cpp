// tests/harness/test_peak_memory.cpp — peak_host_mem_bytes is the configuration's own
// (harness/host_info.h, README's CSV table): the high-water mark is reset as each
// configuration starts, so neither a suite's earlier, larger configuration nor the
// ceilings' triad arrays (env.json `ceilings`, up to 3 x 256 MiB, measured before the
// first configuration) show in a small configuration's row, as they did.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "harness/env_capture.h"
#include "harness/host_info.h"
#include "harness/job.h"
#include "harness/progress.h"
#include "harness/runner.h"
#include "test_helpers.h"

namespace tb {
namespace {

constexpr int64_t kBig = int64_t{256} << 20;  // past glibc's mmap threshold: freed to the kernel

// Resident now (VmRSS), in bytes; -1 where /proc does not say.
int64_t resident_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// Touches kBig bytes, then frees them: the peak rises by about kBig, the resident set falls back.
void peak_and_free() {
  std::unique_ptr<char[]> big(new char[kBig]);
  volatile char* page = big.get();  // volatile stores: the compiler may not elide the buffer
  for (int64_t i = 0; i < kBig; i += 4096) page[i] = 1;
}

struct Capture final : RowSink {
  std::vector<ResultRow> rows;
  void add(const ResultRow& r, const std::vector<CurvePoint>&) override { rows.push_back(r); }
};

TEST(PeakMemory, AResetStartsTheNewPeakAtWhatIsResidentNow) {
  peak_and_free();
  const int64_t with_big = peak_rss_bytes();
  if (!reset_peak_rss()) GTEST_SKIP() << "this kernel refuses /proc/self/clear_refs: the peak is the process's";
  const int64_t after = peak_rss_bytes();
  EXPECT_GE(with_big - after, kBig / 2) << with_big << " then " << after;
  EXPECT_GT(after, 0);
}

TEST(PeakMemory, AConfigurationsRowDoesNotCarryAnEarlierPeak) {
  if (!reset_peak_rss() || resident_bytes() < 0) GTEST_SKIP() << "no resettable peak here (/proc/self/clear_refs)";
  RunConfig c = test::regression_config("reference", {8, 1}, 256);
  c.workload = "peak";
  c.batch = 64;
  c.epochs = 1;
  const Dataset data = test::synthetic(Task::kRegression, c.data.n, 8, 1, 1);
  peak_and_free();  // what the ceilings' arrays, or a larger configuration before, left as the peak
  const int64_t resident = resident_bytes();
  ASSERT_GE(peak_rss_bytes(), resident + kBig / 2);
  Job single;
  Progress quiet(false);
  Capture sink;
  const RunIdentity id{"20261126-000000-test", "2026-11-26T00:00:00Z", "test"};
  const RunOutcome o = run_configuration(c, data, single, id, quiet, sink);
  ASSERT_FALSE(o.failed) << o.failure;
  ASSERT_EQ(sink.rows.size(), 1u);
  // 256 rows of 8 features need kilobytes: the row's peak is about what was resident.
  EXPECT_LT(sink.rows[0].peak_host_mem_bytes, resident + kBig / 4);
  EXPECT_GE(sink.rows[0].peak_host_mem_bytes, resident / 2);
}

}  // namespace
}  // namespace tb
