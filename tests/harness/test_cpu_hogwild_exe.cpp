// tests/harness/test_cpu_hogwild_exe.cpp — cpu-hogwild through the executable: its rows,
// one worker's parameter file equal to cpu-omp's, --workers as a knob and a suite list; a
// worker that throws, exits, is killed, hangs, turns NaN or fails at setup ends the run (exit
// 1, one `failed:` row) within 20 s, leaving no process and nothing in /dev/shm; a parent
// killed with -9 takes its workers, and so the shared segment, along.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "tests/csv_rows.h"
#include "tests/shell.h"

namespace tb {
namespace {

namespace fs = std::filesystem;

// Seconds a faulty run may take from its fault to its exit on a loaded 2-core machine.
constexpr double kFaultBound = 20;

using tb::test::tmp;  // tests/shell.h

// /dev/shm's entries, less the shared-memory segments of MPI jobs other tests may be
// running at the same time (Open MPI's vader/sm, MPICH's): they come and go on their own.
std::set<std::string> dev_shm() {
  std::set<std::string> s;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev/shm", ec)) {
    const std::string name = e.path().filename().string();
    const bool mpi = name.rfind("vader_segment", 0) == 0 || name.rfind("sm_segment", 0) == 0 ||
                     name.rfind("mpich", 0) == 0 || name.rfind("ompi", 0) == 0 || name.rfind("psm", 0) == 0;
    if (!mpi) s.insert(name);
  }
  return s;
}

// Live (not zombie) processes whose command line contains `marker`.
std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> found;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == ::getpid()) continue;
    std::ifstream cmd("/proc/" + std::string(e->d_name) + "/cmdline");
    std::string text((std::istreambuf_iterator<char>(cmd)), {});
    for (char& c : text) c = c ? c : ' ';
    if (text.find(marker) == std::string::npos || text.find("trainbench") == std::string::npos) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string s((std::istreambuf_iterator<char>(stat)), {});
    const size_t paren = s.rfind(')');
    if (paren != std::string::npos && paren + 2 < s.size() && s[paren + 2] == 'Z') continue;
    found.push_back(pid);
  }
  if (d) ::closedir(d);
  return found;
}

const char* kSmall = " --model mlp --layers 16,24,4 --samples 600 --batch 50 --lr 0.2 --shuffle --epochs 2 --warmup 1 "
                     "--reps 2 --threads 1";

TEST(CpuHogwildExe, RowsSayWhatRan) {
  const std::string out = tmp("hog-rows.csv");
  test::ShellResult r = test::trainbench(std::string("run --backend cpu-hogwild --workers 2") + kSmall + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  r = test::trainbench(std::string("run --backend cpu-omp") + kSmall + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto rs = test::csv_rows(out);
  ASSERT_EQ(rs.size(), 4u);
  for (int i = 0; i < 2; ++i) {
    const auto& h = rs[i];
    EXPECT_EQ(h.at("status"), "ok");
    EXPECT_EQ(h.at("world_size"), "2");
    EXPECT_EQ(h.at("workers"), "2");
    EXPECT_EQ(h.at("threads"), "1");
    EXPECT_EQ(h.at("devices"), "cpu");
    EXPECT_EQ(h.at("parallelism"), "shm");
    EXPECT_EQ(h.at("asynchronous"), "true");
    EXPECT_EQ(h.at("scaling_base"), "cpu-omp");
    EXPECT_EQ(h.at("implementation"), "trainbench");
    EXPECT_GT(std::stod(h.at("samples_per_s")), 0);
    EXPECT_GE(std::stod(h.at("forward_s")), 0);
  }
  EXPECT_EQ(rs[2].at("workers"), "");  // a knob cpu-omp does not honour: empty
  EXPECT_EQ(rs[2].at("asynchronous"), "false");
  EXPECT_EQ(rs[2].at("parallelism"), "none");
}

TEST(CpuHogwildExe, OneWorkerSavesCpuOmpsParameters) {
  const std::string out = tmp("hog-one.csv"), a = tmp("omp.params"), b = tmp("hog.params");
  const std::string flags =
      test::with_flags(kSmall, "--threads 2") + " --momentum 0.9 --weight-decay 0.001 --out " + out;
  ASSERT_EQ(test::trainbench("run --backend cpu-omp --save-params " + a + flags).code, 0);
  ASSERT_EQ(test::trainbench("run --backend cpu-hogwild --workers 1 --save-params " + b + flags).code, 0);
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  const std::string pa((std::istreambuf_iterator<char>(fa)), {}), pb((std::istreambuf_iterator<char>(fb)), {});
  ASSERT_GT(pa.size(), 16u);
  EXPECT_TRUE(pa == pb) << "one worker must end with cpu-omp's parameters, bit for bit";
  const auto rs = test::csv_rows(out);
  ASSERT_EQ(rs.size(), 4u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(rs[2 + i].at("param_checksum"), rs[i].at("param_checksum"));
    EXPECT_EQ(rs[2 + i].at("final_loss"), rs[i].at("final_loss"));
  }
}

TEST(CpuHogwildExe, WorkersIsAKnobAndASuiteList) {
  const std::string out = tmp("hog-knob.csv");
  test::ShellResult r = test::trainbench(std::string("run --backend cpu-omp --workers 2") + kSmall + " --out " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  auto rs = test::csv_rows(out);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].at("status"), "skipped: --workers does not apply to cpu-omp (it applies to: cpu-hogwild)");
  EXPECT_EQ(rs[0].at("workers"), "2");  // what was asked
  for (const char* bad : {"0", "4097", "two"}) {
    r = test::trainbench(std::string("run --backend cpu-hogwild --workers ") + bad + kSmall);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("--workers"), std::string::npos) << r.out;
  }
  // A suite: cpu-omp runs first in this process (its OpenMP pool exists), then cpu-hogwild
  // forks its workers from the same process; --workers 1,2 is one configuration per value.
  const std::string suite = tmp("hog.suite"), dir = tmp("hog-suite");
  std::ofstream(suite) << "w:" << kSmall << " --backends cpu-omp,cpu-hogwild --workers 1,2\n";
  r = test::trainbench("suite " + suite + " --out " + dir);
  EXPECT_EQ(r.code, 0) << r.out;
  rs = test::csv_rows(dir + "/results.csv");
  std::vector<std::string> seen;
  for (const auto& row : rs) {
    seen.push_back(row.at("backend") + " x" + row.at("world_size") + " " + row.at("status").substr(0, 8));
  }
  const std::vector<std::string> want = {"cpu-omp x1 ok", "cpu-omp x1 ok", "cpu-omp x1 skipped:",
                                         "cpu-hogwild x1 ok", "cpu-hogwild x1 ok",
                                         "cpu-hogwild x2 ok", "cpu-hogwild x2 ok"};
  EXPECT_EQ(seen, want) << r.out;
}

// A long run (a full one would take minutes) whose worker 1 fails at its 5th step.
class WorkerFault : public ::testing::TestWithParam<const char*> {};

TEST_P(WorkerFault, EndsTheRunWithAFailedRowAndLeavesNothing) {
  const std::string kind = GetParam();
  const std::string marker = "hogwild-fault-" + kind + "-" + std::to_string(::getpid());
  const std::string out = tmp(marker + ".csv");
  const std::set<std::string> shm_before = dev_shm();
  const test::ShellResult r = test::shell(
      "TB_FAULT=rank=1,step=5,kind=" + kind + " " + TB_TRAINBENCH_EXE +
      " run --backend cpu-hogwild --workers 2 --threads 1 --model mlp --layers 32,64,4 --samples 4000 --batch 50 "
      "--epochs 2000 --warmup 1 --reps 1 --comm-timeout 5 --workload " + marker + " --out " + out);
  EXPECT_EQ(r.code, 1) << r.out;
  // From the fault (every kind announces it; the hang then waits out --comm-timeout), not
  // from the start: start-up on a loaded machine is not the fault's cost.
  const double after = test::seconds_after_fault(r);
  EXPECT_GE(after, 0) << "the fault was not announced\n" << r.out;
  EXPECT_LT(after, kFaultBound + (kind == "hang" ? 5 : 0)) << r.out;
  const auto rs = test::csv_rows(out);
  ASSERT_EQ(rs.size(), 1u) << "one row, the failure; no row of an unfinished repetition";
  const std::string& status = rs[0].at("status");
  EXPECT_EQ(status.rfind("failed: ", 0), 0u) << status;
  if (kind == "nan") {
    EXPECT_NE(status.find("non-finite loss at epoch 1 step 10 (warm-up)"), std::string::npos) << status;
  } else if (kind == "hang") {
    // (On a heavily loaded machine the other worker may be named too.)
    EXPECT_NE(status.find("no worker took a step for 5 s (--comm-timeout); unfinished: "), std::string::npos)
        << status;
    EXPECT_NE(status.find("worker 1"), std::string::npos) << status;
  } else {
    EXPECT_NE(status.find("worker 1 of 2"), std::string::npos) << status;
  }
  if (kind == "kill") {
    EXPECT_NE(status.find("killed by signal 9"), std::string::npos) << status;
  }
  if (kind == "exit") {
    EXPECT_NE(status.find("exited with status 3"), std::string::npos) << status;
  }
  if (kind == "throw") {
    EXPECT_NE(status.find("failed: injected fault 'throw'"), std::string::npos) << status;
  }
  EXPECT_TRUE(processes_with(marker).empty()) << "a worker outlived the run";
  EXPECT_EQ(dev_shm(), shm_before);
}

INSTANTIATE_TEST_SUITE_P(Kinds, WorkerFault, ::testing::Values("throw", "exit", "kill", "hang", "nan", "setup"));

TEST(CpuHogwildExe, AParentKilledWithSigkillTakesItsWorkersAlong) {
  const std::string marker = "hogwild-orphan-" + std::to_string(::getpid());
  const std::set<std::string> shm_before = dev_shm();
  const test::ShellResult start = test::shell(
      std::string(TB_TRAINBENCH_EXE) +
      " run --backend cpu-hogwild --workers 2 --threads 1 --model mlp --layers 32,64,4 --samples 4000 --batch 50 "
      "--epochs 100000 --reps 1 --workload " + marker + " --out " + tmp(marker + ".csv") +
      " >/dev/null 2>&1 & echo $!");
  const pid_t parent = static_cast<pid_t>(std::atoi(start.out.c_str()));
  ASSERT_GT(parent, 0) << start.out;
  std::vector<pid_t> all;
  const auto t0 = std::chrono::steady_clock::now();
  while ((all = processes_with(marker)).size() < 3 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(static_cast<int>(kFaultBound))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(all.size(), 3u) << "parent and two workers";
  // The shared segment is a memfd (no name in /dev/shm) mapped by every process of the run.
  for (pid_t p : all) {
    std::ifstream maps("/proc/" + std::to_string(p) + "/maps");
    const std::string m((std::istreambuf_iterator<char>(maps)), {});
    EXPECT_NE(m.find("/memfd:trainbench-hogwild"), std::string::npos) << p;
  }
  ASSERT_EQ(::kill(parent, SIGKILL), 0);
  const auto t1 = std::chrono::steady_clock::now();
  while (!processes_with(marker).empty() &&
         std::chrono::steady_clock::now() - t1 < std::chrono::seconds(static_cast<int>(kFaultBound))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(processes_with(marker).empty()) << "workers outlived their parent: the segment would stay mapped";
  EXPECT_EQ(dev_shm(), shm_before);
}

}  // namespace
}  // namespace tb
