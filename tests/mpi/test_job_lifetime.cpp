// tests/mpi/test_job_lifetime.cpp — a multi-process job never outlives its reason to run,
// and never starts where it cannot: a rank that never joins (hung before MPI_Init) ends
// the job once the join deadline (30 s floor) has passed; a suite killed outright
// (SIGKILL, no chance to forward it) takes its mpirun job and ranks with it; a suite
// started as several ranks, or given a launcher that cannot start, is refused (exit 2)
// before it writes anything.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/shell.h"

namespace {

namespace fs = std::filesystem;
using tb::test::mpirun;
using tb::test::tmp;

// 'TEXT' for sh (the launchers named here hold no quote).
std::string sh_quote(const std::string& s) { return "'" + s + "'"; }

const std::string kWorkload =
    " --model mlp --layers 12,20,9,4 --samples 203 --batch 26 --epochs 2 --warmup 0 --reps 1 --lr 0.2 --threads 1";

// MPI_Init waits for every rank; rank 1 never gets there (as a rank stopped with
// SIGSTOP, or stuck loading libraries on a bad node). Rank 0's join deadline — the
// 30 s floor, above --comm-timeout 3 — ends it, and mpirun ends the job. Timed from
// the fault: 30 s plus seconds for mpirun to end the ranks on a loaded machine.
TEST(JobLifetime, ARankThatNeverJoinsEndsTheJobAfterTheJoinDeadline) {
  const std::string out = tmp("never-joins.csv");
  const tb::test::ShellResult r = tb::test::shell("TB_FAULT=rank=1,step=0,kind=hang timeout 110 " + mpirun(2) +
                                                  TB_TRAINBENCH_EXE + " run --backend cpu-ddp" + kWorkload +
                                                  " --comm-timeout 3 --out " + out);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.code, 124) << "hang guard: the job ran 110 s\n" << r.out;
  const double after = tb::test::seconds_after_fault(r);
  EXPECT_GE(after, 0) << "no fault announced\n" << r.out;
  EXPECT_LT(after, 30.0 + 30.0) << r.out;
  EXPECT_NE(r.out.find("MPI_Init did not complete within 30 s"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out) && fs::file_size(out) > 0) << "nothing was trained: nothing is written";
}

// The processes whose environment holds MARK=VALUE (the suite's children inherit it).
std::vector<pid_t> marked(const std::string& mark) {
  std::vector<pid_t> pids;
  const std::string want = mark + '\0';
  for (const fs::directory_entry& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "environ", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string env = '\0' + ss.str();
    if (env.find('\0' + want) != std::string::npos) pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

std::string cmdline(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  for (char& c : s) c = c == '\0' ? ' ' : c;
  return s;
}

// SIGKILL reaches the suite alone (no handler runs, nothing is forwarded): its mpirun
// job used to train on unseen, ranks and all. The launcher now gets SIGTERM when the
// suite dies (PR_SET_PDEATHSIG) and ends its ranks.
TEST(JobLifetime, ASuiteKilledOutrightTakesItsJobWithIt) {
  const std::string suite = tmp("killed.suite"), dir = tmp("killed-run");
  std::ofstream(suite) << "long: --model mlp --layers 12,20,9,4 --samples 2000 --batch 20 --epochs 100000 "
                          "--warmup 0 --reps 1 --lr 0.01 --threads 1 --backends cpu-ddp --world-sizes 2\n";
  const std::string mark = "TB_TEST_MARK=killed-suite-" + std::to_string(::getpid());
  const pid_t suite_pid = ::fork();
  ASSERT_GE(suite_pid, 0);
  if (suite_pid == 0) {
    ::putenv(const_cast<char*>(mark.c_str()));
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(null_fd, STDERR_FILENO);
    ::execl(TB_TRAINBENCH_EXE, TB_TRAINBENCH_EXE, "suite", suite.c_str(), "--out", dir.c_str(), "--no-ceilings",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait for the ranks (trainbench suite-worker; not mpirun, whose line names it too).
  const std::string rank_line = std::string(TB_TRAINBENCH_EXE) + " suite-worker ";
  const auto started = std::chrono::steady_clock::now();
  int ranks = 0;
  while (ranks < 2 && std::chrono::steady_clock::now() - started < std::chrono::seconds(60)) {
    ranks = 0;
    for (pid_t p : marked(mark)) ranks += cmdline(p).rfind(rank_line, 0) == 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ::kill(suite_pid, SIGKILL);
  EXPECT_EQ(ranks, 2) << "the suite's job did not start within 60 s";
  int status = 0;
  ::waitpid(suite_pid, &status, 0);
  const auto killed = std::chrono::steady_clock::now();
  std::vector<pid_t> left = marked(mark);
  while (!left.empty() && std::chrono::steady_clock::now() - killed < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    left = marked(mark);
  }
  std::string names;
  for (pid_t p : left) {
    names += std::to_string(p) + ": " + cmdline(p) + "\n";
    ::kill(p, SIGKILL);  // leave nothing behind for the next test
  }
  // 20 s: mpirun's SIGTERM to the ranks, and its own wait, on a loaded 2-core machine.
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_TRUE(left.empty()) << "still running 30 s after the suite was killed:\n" << names;
  EXPECT_LT(took, 20.0);
}

// Started as 2 ranks, the suite would run twice, each copy starting every job again.
TEST(JobLifetime, ASuiteStartedAsSeveralRanksIsRefused) {
  const std::string suite = tmp("ranks.suite"), dir = tmp("ranks-run");
  std::ofstream(suite) << "a:" << kWorkload << " --backends cpu-omp\n";
  const tb::test::ShellResult r =
      tb::test::shell("timeout 100 " + mpirun(2) + TB_TRAINBENCH_EXE + " suite " + suite + " --out " + dir);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("suite: started as 2 processes by mpirun/srun; run the suite once, without a launcher"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir));
}

// TB_MPIRUN is run as one program: words in it (flags belong in TB_MPIRUN_FLAGS) or a
// program that is not there are bad input before anything runs, not a failed row per
// multi-process entry; `launcher N` says the same.
TEST(JobLifetime, ALauncherThatCannotStartIsRefusedBeforeTheSuiteRuns) {
  const std::string suite = tmp("launcher.suite");
  std::ofstream(suite) << "a:" << kWorkload << " --backends cpu-omp,cpu-ddp --world-sizes 2\n";
  for (const auto& [launcher, message] : std::vector<std::pair<std::string, std::string>>{
           {"mpirun --oversubscribe", "TB_MPIRUN='mpirun --oversubscribe' is not one program"},
           {"tb-no-such-mpirun", "TB_MPIRUN='tb-no-such-mpirun' is not found on PATH"}}) {
    const std::string dir = tmp("launcher-run");
    const tb::test::ShellResult r = tb::test::shell("TB_MPIRUN=" + sh_quote(launcher) + " " + TB_TRAINBENCH_EXE +
                                                    " suite " + suite + " --out " + dir + " --no-ceilings");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir)) << launcher;
    const tb::test::ShellResult l =
        tb::test::shell("TB_MPIRUN=" + sh_quote(launcher) + " " + TB_TRAINBENCH_EXE + " launcher 2");
    EXPECT_EQ(l.code, 2) << l.out;
    EXPECT_NE(l.out.find("launcher: " + message), std::string::npos) << l.out;
  }
  const tb::test::ShellResult many = tb::test::trainbench("launcher 5000");
  EXPECT_EQ(many.code, 2) << many.out;
  EXPECT_NE(many.out.find("expected one integer in [1, 4096]"), std::string::npos) << many.out;
}

}  // namespace

namespace {

// A launcher that runs but starts no rank (srun outside an allocation, without a
// controller; here `false`): the row said "a rank died or was stopped". It now says the
// ranks never formed the job, and log.txt has the launcher's lines under the entry's.
TEST(JobLifetime, ALauncherThatStartsNoRankFailsTheRowSayingTheJobNeverFormed) {
  const std::string suite = tmp("no-rank.suite"), dir = tmp("no-rank-run");
  fs::remove_all(dir);
  std::ofstream(suite) << "a:" << kWorkload << " --backends cpu-ddp --world-sizes 2\n";
  const tb::test::ShellResult r = tb::test::shell("TB_MPIRUN=false " + std::string(TB_TRAINBENCH_EXE) + " suite " +
                                                  suite + " --out " + dir + " --no-ceilings");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("failed: false -np 2 exited with status 1 (the ranks never formed the job: the launcher, or "
                       "MPI_Init in a rank, failed; see log.txt)"),
            std::string::npos)
      << r.out;
  std::ifstream log(dir + "/log.txt");
  std::string first;
  std::getline(log, first);
  EXPECT_EQ(first, "[1/1] a cpu-ddp threads=1");
}

}  // namespace
