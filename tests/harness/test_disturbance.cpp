// tests/harness/test_disturbance.cpp — the disturbance of a measurement: other
// processes' and the hypervisor's share of the host's CPU time between two snapshots.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "harness/disturbance.h"

namespace {

using tb::CpuSnapshot;

TEST(Disturbance, SharesAreBusyMinusOwnAndStealOverWallTimesCpus) {
  CpuSnapshot a, b;
  a.ok = b.ok = true;
  a.cpus = b.cpus = 2;
  a.wall_s = 10;
  b.wall_s = 14;  // 4 s x 2 CPUs = 8 CPU-seconds
  a.busy_s = 100;
  b.busy_s = 106;  // 6 busy CPU-seconds, 2 of them the job's own
  a.steal_s = 1;
  b.steal_s = 1.4;
  const tb::Disturbance d = tb::disturbance_between(a, b, 2.0);
  EXPECT_DOUBLE_EQ(d.others_share, 0.5);
  EXPECT_DOUBLE_EQ(d.steal_share, 0.05);
  // Tick rounding can make busy - own slightly negative: clamped to 0.
  EXPECT_DOUBLE_EQ(tb::disturbance_between(a, b, 7.0).others_share, 0.0);
  b.ok = false;
  EXPECT_LT(tb::disturbance_between(a, b, 0).others_share, 0);
}

// A repetition is judged over its own window when that lasts kMinJudgedS (0.5 s), over all
// timed repetitions so far when those do, and not at all when even they are shorter.
TEST(Disturbance, AShortRepetitionIsJudgedSinceTheFirstOrNotAtAll) {
  using tb::JudgedWindow;
  EXPECT_EQ(tb::judged_window(0.5, 0.5), JudgedWindow::kOwn);
  EXPECT_EQ(tb::judged_window(2.0, 9.0), JudgedWindow::kOwn);
  EXPECT_EQ(tb::judged_window(0.1, 0.5), JudgedWindow::kSinceFirst);
  EXPECT_EQ(tb::judged_window(0.004, 0.49), JudgedWindow::kNone);
  EXPECT_EQ(tb::judged_window(0, 0), JudgedWindow::kNone);
}

// Ranks are grouped by the kernel whose /proc/stat they read: its boot_id where Linux has
// one, else the hostname; the same answer every time in one process.
TEST(Disturbance, TheKernelKeyIsTheBootIdElseTheHostname) {
  const std::string key = tb::kernel_key();
  EXPECT_EQ(key, tb::kernel_key());
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (std::getline(in, id) && !id.empty()) {
    EXPECT_EQ(key, "boot_id " + id);
  } else {
    EXPECT_EQ(key.rfind("host ", 0), 0u) << key;
  }
}

// A process spinning on one CPU beside us is seen: at least a quarter of the host's time
// on a machine of up to 2 CPUs (other load only adds to it).
TEST(Disturbance, ASpinningNeighbourIsSeen) {
  const CpuSnapshot a = tb::cpu_snapshot();
  if (!a.ok) GTEST_SKIP() << "/proc/stat not readable here";
  const pid_t spinner = ::fork();
  if (spinner == 0) {
    volatile unsigned long spin = 0;
    for (;;) {
      spin = spin + 1;
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const CpuSnapshot b = tb::cpu_snapshot();
  ::kill(spinner, SIGKILL);
  ::waitpid(spinner, nullptr, 0);
  const tb::Disturbance d = tb::disturbance_between(a, b, b.own_s - a.own_s);
  EXPECT_GT(d.others_share, 0.9 / (b.cpus > 2 ? b.cpus : 2) / 2) << "cpus " << b.cpus;
  EXPECT_LE(d.others_share, 1.0);
  EXPECT_GE(d.steal_share, 0.0);
}

}  // namespace

#include <fstream>

#include "harness/result_schema.h"
#include "tests/csv_rows.h"
#include "tests/shell.h"

namespace {

// End to end: a run beside a spinning process records the share it lost and is marked
// disturbed; the suite warns at its end, counting a row too short to judge (entry s) apart.
// 40 epochs make each repetition of entry d long enough to judge alone (about 1.7 s here,
// Ice Lake; kMinJudgedS is 0.5 s).
TEST(Disturbance, ARowTakenBesideASpinnerIsMarkedAndTheSuiteWarns) {
  if (!tb::cpu_snapshot().ok) GTEST_SKIP() << "/proc/stat not readable here";
  const pid_t spinner = ::fork();
  if (spinner == 0) {
    volatile unsigned long spin = 0;
    for (;;) {
      spin = spin + 1;
    }
  }
  const std::string dir = std::string(TB_TEST_TMPDIR) + "/disturbed";
  tb::test::shell("rm -rf " + dir);
  const std::string suite = std::string(TB_TEST_TMPDIR) + "/disturbed.suite";
  std::ofstream(suite) << "d: --model mlp --layers 32,64,4 --samples 100000 --batch 64 --epochs 40 --warmup 0 "
                          "--reps 2 --backends cpu-omp --threads 1\n"
                          "s: --model linear --layers 8,1 --samples 256 --batch 64 --epochs 1 --warmup 0 "
                          "--reps 1 --backends cpu-omp --threads 1\n";
  const tb::test::ShellResult r = tb::test::trainbench("suite " + suite + " --out " + dir);
  ::kill(spinner, SIGKILL);
  ::waitpid(spinner, nullptr, 0);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("2 of 2 timed rows judged were disturbed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 more not judged"), std::string::npos) << r.out;
  int rows = 0;
  for (const auto& row : tb::test::csv_rows(dir + "/results.csv")) {
    ASSERT_EQ(row.size(), tb::result_columns().size()) << "a row not written whole";
    if (row.at("workload") == "s") {
      EXPECT_EQ(row.at("disturbed"), "");
      continue;
    }
    ASSERT_GE(std::stod(row.at("train_time_s")), tb::kMinJudgedS) << "too short to judge";
    EXPECT_EQ(row.at("disturbed"), "true");
    EXPECT_GT(std::stod(row.at("others_cpu_share")), 0.05);
    ++rows;
  }
  EXPECT_EQ(rows, 2);
}

// A run whose timed repetitions last a few ms together is not judged: its cells are empty
// and the suite does not warn (10 ms ticks would read such a window as 0% or 100%).
TEST(Disturbance, RepetitionsTooShortToJudgeLeaveTheCellsEmpty) {
  if (!tb::cpu_snapshot().ok) GTEST_SKIP() << "/proc/stat not readable here";
  const std::string dir = std::string(TB_TEST_TMPDIR) + "/too-short";
  tb::test::shell("rm -rf " + dir);
  const std::string suite = std::string(TB_TEST_TMPDIR) + "/too-short.suite";
  // 256 samples x 8 features, 3 repetitions of 1 epoch: microseconds each.
  std::ofstream(suite) << "s: --model linear --layers 8,1 --samples 256 --batch 64 --epochs 1 --warmup 0 "
                          "--reps 3 --backends cpu-omp,reference --threads 1\n";
  const tb::test::ShellResult r = tb::test::trainbench("suite " + suite + " --out " + dir);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("were disturbed"), std::string::npos) << r.out;
  int rows = 0;
  for (const auto& row : tb::test::csv_rows(dir + "/results.csv")) {
    ASSERT_EQ(row.size(), tb::result_columns().size()) << "a row not written whole";
    ASSERT_LT(std::stod(row.at("train_time_s")), 0.1) << "not a short run";
    EXPECT_EQ(row.at("others_cpu_share"), "");
    EXPECT_EQ(row.at("steal_share"), "");
    EXPECT_EQ(row.at("disturbed"), "");
    ++rows;
  }
  EXPECT_EQ(rows, 6);
}

}  // namespace
