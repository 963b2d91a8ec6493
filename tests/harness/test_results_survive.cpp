// tests/harness/test_results_survive.cpp — what survives which fault (README "What
// survives which fault"): rows of finished repetitions across SIGINT/SIGTERM (also a
// suite's MPI job, which must end with it), a full disk or file size limit (the file
// is cut back to its last whole row, exit 74), two suites on one folder, outputs and
// integer flags checked before training, sizes that do not fit in memory.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/backend.h"
#include "harness/csv_writer.h"
#include "harness/result_row.h"
#include "tests/csv_rows.h"
#include "tests/shell.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using tb::test::ShellResult;
const auto& run = tb::test::trainbench;
using Clock = std::chrono::steady_clock;

using tb::test::tmp;  // tests/shell.h

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every line of a results file is a whole row of the current schema, and the file
// ends with a newline. Returns the number of data rows.
size_t whole_rows(const std::string& path) {
  const std::string text = slurp(path);
  EXPECT_FALSE(text.empty()) << path;
  if (text.empty()) return 0;
  EXPECT_EQ(text.back(), '\n') << path;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(tb::csv_fields(line), tb::results_header()) << path;
  size_t rows = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(tb::csv_fields(line).size(), tb::results_header().size()) << path << ": " << line;
    ++rows;
  }
  return rows;
}

// A background trainbench (its own process group, like a job under a shell).
struct Child {
  pid_t pid = -1;
  explicit Child(const std::vector<std::string>& args, const std::string& log) {
    std::vector<std::string> a = {TB_TRAINBENCH_EXE};
    a.insert(a.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    EXPECT_EQ(posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
  }
  // Exit status (128 + signal when killed); -1 if still running after `limit_s`.
  int wait_for(double limit_s) {
    const auto t0 = Clock::now();
    for (;;) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::duration<double>(Clock::now() - t0).count() > limit_s) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~Child() {
    if (pid > 0) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// Waits until `path` holds at least `rows` data rows (a hang guard of 120 s).
bool wait_for_rows(const std::string& path, size_t rows) {
  const auto t0 = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - t0).count() < 120) {
    std::ifstream in(path);
    size_t n = 0;
    for (std::string l; std::getline(in, l);) ++n;
    if (n >= rows + 1) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

const std::vector<std::string> kLongRun = {"--model", "mlp", "--layers", "32,64,4", "--samples", "4000", "--batch",
                                           "64", "--epochs", "1", "--warmup", "0", "--reps", "100000",
                                           "--threads", "1"};

class Signals : public ::testing::TestWithParam<int> {};

// Rows of finished repetitions are on disk as they end, and stay whole after the signal.
TEST_P(Signals, RunKeepsEveryFinishedRepetitionAndExits128PlusTheSignal) {
  const std::string out = tmp("sig-run-" + std::to_string(GetParam()) + ".csv");
  std::vector<std::string> args = {"run", "--out", out};
  args.insert(args.end(), kLongRun.begin(), kLongRun.end());
  Child c(args, out + ".log");
  ASSERT_TRUE(wait_for_rows(out, 3)) << slurp(out + ".log");
  ::kill(c.pid, GetParam());
  const auto t0 = Clock::now();
  const int code = c.wait_for(60);
  EXPECT_EQ(code, 128 + GetParam()) << slurp(out + ".log");
  // From the signal: the current step finishes, nothing more (bound for a loaded 2-core machine).
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 20.0);
  EXPECT_GE(whole_rows(out), 3u);
  EXPECT_NE(slurp(out + ".log").find("interrupted by"), std::string::npos) << slurp(out + ".log");
}

INSTANTIATE_TEST_SUITE_P(IntAndTerm, Signals, ::testing::Values(SIGINT, SIGTERM));

// A scheduler's SIGTERM to the suite reaches its MPI job: the suite, mpirun and the
// ranks are gone within seconds of the signal; the rows written before are whole; the
// log says what happened; exit 143.
TEST(SuiteSignals, SigtermEndsTheSuiteAndItsMpiJobAndKeepsTheRows) {
  const std::string dir = tmp("sig-suite");
  const std::string suite = tmp("sig.suite");
  std::ofstream(suite) << "fast: --model linear --layers 8,1 --samples 256 --batch 64 --epochs 1 --warmup 0 --reps 2 "
                          "--backends cpu-omp --threads 1\n"
                          "slow: --model mlp --layers 32,64,4 --samples 4000 --batch 64 --epochs 1 --warmup 0 "
                          "--reps 100000 --backends cpu-ddp --world-sizes 2 --threads 1\n";
  Child c({"suite", suite, "--out", dir}, dir + ".log");
  ASSERT_TRUE(wait_for_rows(dir + "/results.csv", 2)) << slurp(dir + ".log");
  // Let the MPI job start and train (its scratch rows appear in .worker-1).
  ASSERT_TRUE(wait_for_rows(dir + "/.worker-1/results.csv", 1)) << slurp(dir + "/log.txt");
  ::kill(c.pid, SIGTERM);
  const auto t0 = Clock::now();
  EXPECT_EQ(c.wait_for(60), 143) << slurp(dir + ".log");
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 20.0);
  // No rank of the job is left: nothing still names this folder on its command line.
  // ("[.]worker": the pattern must not match this shell's own command line.)
  const ShellResult left = tb::test::shell("pgrep -f -- '" + dir + "/[.]worker' || true");
  EXPECT_EQ(left.out, "") << left.out;
  EXPECT_GE(whole_rows(dir + "/results.csv"), 3u);  // fast's 2 rows and the worker's finished repetitions
  // The job the suite ended is not a failure: no row says failed (the interrupted
  // repetition simply did not run).
  EXPECT_EQ(slurp(dir + "/results.csv").find("failed: "), std::string::npos) << slurp(dir + "/results.csv");
  EXPECT_NE(slurp(dir + "/log.txt").find("interrupted by SIGTERM during configuration 2 of 2"), std::string::npos)
      << slurp(dir + "/log.txt");
}

// log.txt agrees with results.csv: each row in order, one that did not run with its
// reason (it said "samples/s=0 final_loss=0"), and the finished repetitions of the
// configuration a signal interrupted (they were missing).
TEST(SuiteSignals, LogTxtListsEveryRowOfResultsCsvAlsoWhenInterrupted) {
  const std::string dir = tmp("log-rows"), suite = tmp("log-rows.suite");
  std::string slow;
  for (const std::string& w : kLongRun) slow += " " + w;
  std::ofstream(suite) << "big: --model linear --layers 1000,1 --samples 60000000 --batch 100 --epochs 1 --warmup 0 "
                          "--reps 1 --backends cpu-omp --threads 1\n"
                       << "slow:" << slow << " --backends cpu-omp\n";
  Child c({"suite", suite, "--no-ceilings", "--out", dir}, dir + ".log");
  ASSERT_TRUE(wait_for_rows(dir + "/results.csv", 4)) << slurp(dir + ".log");
  ::kill(c.pid, SIGINT);
  EXPECT_EQ(c.wait_for(60), 130) << slurp(dir + ".log");
  const auto rows = tb::test::csv_rows(dir + "/results.csv");
  ASSERT_GE(rows.size(), 4u);
  std::vector<std::string> logged;
  std::istringstream log(slurp(dir + "/log.txt"));
  for (std::string line; std::getline(log, line);) {
    if (line.rfind("  rep ", 0) == 0) logged.push_back(line);
  }
  ASSERT_EQ(logged.size(), rows.size()) << slurp(dir + "/log.txt");
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string& status = rows[i].at("status");
    EXPECT_EQ(logged[i].rfind("  rep " + rows[i].at("repetition") + ": " + status, 0), 0u) << logged[i];
    EXPECT_EQ(logged[i].find("samples/s=") != std::string::npos, status == "ok") << logged[i];
  }
  EXPECT_EQ(rows[0].at("status").rfind("failed: out of host memory", 0), 0u);
}

// A file size limit (as a full disk): the failed row is cut off, one line, exit 74.
TEST(FullDisk, AFailedAppendLeavesTheFileAtItsLastWholeRowAndExits74) {
  const std::string out = tmp("fsize.csv");
  // bash's ulimit -f counts KiB (16 KiB: the header, env.json beside it and some rows).
  const ShellResult r = tb::test::shell("bash -c 'ulimit -f 16; " + std::string(TB_TRAINBENCH_EXE) +
                                        " run --model linear --layers 8,1 --samples 256 --batch 64 --epochs 1 "
                                        "--warmup 0 --reps 200 --threads 1 --out " + out + "'");
  EXPECT_EQ(r.code, 74) << r.out;
  EXPECT_NE(r.out.find("write failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ends at its last complete row"), std::string::npos) << r.out;
  EXPECT_GE(whole_rows(out), 1u);
  EXPECT_LE(fs::file_size(out), 16384u);
}

// A full disk before the first row (a file size limit of 0 KiB: the header cannot be
// written; of 2 KiB: the header can, its env.json cannot): exit 74, one line naming the
// file, and nothing half-written left behind, neither an empty CSV nor a bare header.
TEST(FullDisk, ARunOrSuiteThatCannotStartLeavesNoFileBehind) {
  const auto limited = [](const std::string& kib, const std::string& args) {
    return tb::test::shell("bash -c 'ulimit -f " + kib + "; " + std::string(TB_TRAINBENCH_EXE) + " " + args + "'");
  };
  for (const std::string kib : {"0", "2"}) {
    const std::string out = tmp("start-" + kib + ".csv");
    const ShellResult r = limited(kib, "run --model linear --layers 8,1 --samples 64 --batch 16 --epochs 1 --reps 1 "
                                       "--no-ceilings --out " + out);
    EXPECT_EQ(r.code, 74) << r.out;
    EXPECT_NE(r.out.find(out + (kib == "0" ? "" : ".env.json") + ": write failed: File too large"),
              std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(out)) << kib << " KiB";
    EXPECT_FALSE(fs::exists(out + ".env.json")) << kib << " KiB";
    for (const auto& e : fs::directory_iterator(TB_TEST_TMPDIR)) {
      EXPECT_EQ(e.path().filename().string().rfind("start-" + kib + ".csv", 0), std::string::npos) << e.path();
    }
  }
  // A suite: the folder it made goes; a folder that was there keeps only what it held.
  const std::string made = tmp("start-suite"), there = tmp("start-there");
  fs::create_directories(there);
  std::ofstream(there + "/notes.txt") << "mine\n";
  for (const std::string& dir : {made, there}) {
    const ShellResult r =
        limited("0", "suite " + std::string(TB_SOURCE_DIR) + "/bench/suites/quick.suite --no-ceilings --out " + dir);
    EXPECT_EQ(r.code, 74) << r.out;
    EXPECT_NE(r.out.find(dir + "/results.csv: write failed: File too large"), std::string::npos) << r.out;
  }
  EXPECT_FALSE(fs::exists(made));
  for (const char* name : {"results.csv", "curves.csv", "env.json", "log.txt"}) {
    EXPECT_FALSE(fs::exists(there + "/" + name)) << name;
  }
  EXPECT_EQ(slurp(there + "/notes.txt"), "mine\n");
}

// A real full file system (a 20 KiB tmpfs: five pages, one each for the lock, results.csv and
// curves.csv and two for env.json, whose ceilings entry and the build path can take it past
// one page), where this machine lets the test mount one.
TEST(FullDisk, ASuiteOnAFullFileSystemKeepsWholeRowsAndSaysTheLogIsIncomplete) {
  const std::string mnt = tmp("tiny-fs");
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=20k") != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (" << std::strerror(errno) << "); the ulimit test covers the cut";
  }
  const ShellResult r = run("suite " + std::string(TB_SOURCE_DIR) + "/bench/suites/quick.suite --out " + mnt + "/run");
  EXPECT_EQ(r.code, 74) << r.out;
  EXPECT_NE(r.out.find("No space left on device"), std::string::npos) << r.out;
  EXPECT_GE(whole_rows(mnt + "/run/results.csv"), 1u);
  ::umount(mnt.c_str());
}

TEST(OutDir, ASecondSuiteOnTheSameFolderIsRefusedNamingTheHolder) {
  const std::string dir = tmp("locked");
  const std::string suite = tmp("lock.suite");
  std::ofstream(suite) << "slow: --model mlp --layers 32,64,4 --samples 4000 --batch 64 --epochs 1 --warmup 0 "
                          "--reps 100000 --backends cpu-omp --threads 1\n";
  Child first({"suite", suite, "--out", dir}, dir + ".log");
  ASSERT_TRUE(wait_for_rows(dir + "/results.csv", 1)) << slurp(dir + ".log");
  const ShellResult second = run("suite " + suite + " --out " + dir);
  EXPECT_EQ(second.code, 2) << second.out;
  EXPECT_NE(second.out.find("in use by another trainbench suite (pid " + std::to_string(first.pid) + ")"),
            std::string::npos)
      << second.out;
  ::kill(first.pid, SIGTERM);
  EXPECT_EQ(first.wait_for(60), 143);
  // Finished, the folder holds a run: a new suite there is refused too (one run id per folder).
  const ShellResult again = run("suite " + suite + " --out " + dir);
  EXPECT_EQ(again.code, 2) << again.out;
  EXPECT_NE(again.out.find("already holds the results of another run"), std::string::npos) << again.out;
}

// `run --out` into a suite's results.csv mixed a second run into the suite's folder, whose
// env.json describes its own run only: refused, nothing written. A file of its own in the
// folder (as make perf's paired.csv) is allowed.
TEST(OutDir, ARunIntoASuitesResultsIsRefused) {
  const std::string dir = tmp("suite-folder"), suite = tmp("suite-folder.suite");
  const std::string small = "--model linear --layers 8,1 --samples 64 --batch 16 --epochs 1 --warmup 0 --reps 1";
  std::ofstream(suite) << "s: " << small << " --backends cpu-omp --threads 1\n";
  ASSERT_EQ(run("suite " + suite + " --no-ceilings --out " + dir).code, 0);
  const std::string before = slurp(dir + "/results.csv");
  for (const char* name : {"results.csv", "curves.csv"}) {
    const ShellResult r = run("run " + small + " --no-ceilings --out " + dir + "/" + name);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("--out: '" + dir + "' is a suite's folder"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir + "/" + name + ".env.json"));
  }
  EXPECT_EQ(slurp(dir + "/results.csv"), before);
  const ShellResult own = run("run " + small + " --no-ceilings --out " + dir + "/extra.csv");
  EXPECT_EQ(own.code, 0) << own.out;
  EXPECT_EQ(whole_rows(dir + "/extra.csv"), 1u);
}

// Two suites started together without --out (two terminals, two CI jobs on one runner):
// each gets its own run id and its own default folder results/<run-id>/, so neither is
// refused as "in use" and the reports never merge them as one run. Both start within
// the same second here, which is when a time-and-host id alone would collide.
TEST(OutDir, TwoSuitesStartedTogetherWriteTwoRunsWithTheirOwnIds) {
  const std::string dir = tmp("twins");
  fs::create_directories(dir);
  std::ofstream(dir + "/tiny.suite") << "defaults: --epochs 1 --warmup 0 --reps 1 --seed 1\n"
                                        "tiny: --model linear --layers 4,1 --samples 64 --batch 16 --backends "
                                        "reference\n";
  const std::string exe = TB_TRAINBENCH_EXE;
  const ShellResult r = tb::test::shell(
      "cd " + dir + " && { " + exe + " suite tiny.suite --no-ceilings > a.log 2>&1 & echo $! > a.pid; " + exe +
      " suite tiny.suite --no-ceilings > b.log 2>&1 & echo $! > b.pid; wait %1; ra=$?; wait %2; rb=$?; "
      "echo \"rc $ra $rb\"; }");
  EXPECT_NE(r.out.find("rc 0 0"), std::string::npos) << r.out << slurp(dir + "/a.log") << slurp(dir + "/b.log");
  for (const char* who : {"a", "b"}) {
    std::string pid = slurp(dir + "/" + who + ".pid");
    pid.erase(pid.find_last_not_of("\n") + 1);
    // results/<run-id>/ whose run id ends in the suite's process id, on every row.
    std::vector<fs::path> mine;
    for (const auto& e : fs::directory_iterator(dir + "/results")) {
      const std::string name = e.path().filename().string();
      if (name.size() > pid.size() && name.compare(name.size() - pid.size() - 1, std::string::npos, "-" + pid) == 0) {
        mine.push_back(e.path());
      }
    }
    ASSERT_EQ(mine.size(), 1u) << who << " (pid " << pid << ")";
    const std::string csv = slurp((mine[0] / "results.csv").string());
    const std::string id = mine[0].filename().string();
    EXPECT_NE(csv.find("\n2," + id + ","), std::string::npos) << csv;
    EXPECT_NE(slurp((mine[0] / "env.json").string()).find("\"run_id\": \"" + id + "\""), std::string::npos);
  }
}

TEST(Outputs, SaveParamsAndOutAreCheckedBeforeTraining) {
  const std::string out = tmp("outs.csv");
  const char* small = " --model linear --layers 8,1 --samples 64 --batch 16 --epochs 1 --reps 1";
  ShellResult r = run(std::string("run") + small + " --out " + out + " --save-params " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--save-params: '" + out + "' is also an output of --out"), std::string::npos) << r.out;
  r = run(std::string("run") + small + " --out " + out + " --save-params " + TB_TEST_TMPDIR);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("is a directory"), std::string::npos) << r.out;
  r = run(std::string("run") + small + " --out " + out + " --save-params " + TB_TEST_TMPDIR + "/no/such/p.bin");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  r = run(std::string("run") + small + " --out " + std::string(TB_TEST_TMPDIR));
  EXPECT_EQ(r.code, 2) << r.out;
  // The same new file named two ways: caught before it exists (weakly_canonical alone let
  // "x.csv" and "./x.csv" differ, and the params replaced the rows).
  const ShellResult twice = tb::test::shell(std::string("cd ") + TB_TEST_TMPDIR + " && rm -f twice.csv && " +
                                            TB_TRAINBENCH_EXE + " run" + small +
                                            " --out twice.csv --save-params ./twice.csv");
  EXPECT_EQ(twice.code, 2) << twice.out;
  EXPECT_NE(twice.out.find("is also an output of --out"), std::string::npos) << twice.out;
  EXPECT_FALSE(fs::exists(std::string(TB_TEST_TMPDIR) + "/twice.csv"));
  for (const char* empty : {" --out ''", " --out x.csv --save-params ''"}) {
    r = run(std::string("run") + small + empty);
    EXPECT_EQ(r.code, 2) << empty << ": " << r.out;
    EXPECT_NE(r.out.find("invalid value ''"), std::string::npos) << empty << ": " << r.out;
  }
  EXPECT_FALSE(fs::exists(out)) << "nothing written on bad input";
  // An existing file that is not a parameters file (recorded results, say) is kept; an
  // earlier run's parameters file is replaced.
  const std::string kept = tmp("kept-results.csv");
  std::ofstream(kept) << "schema_version,run_id\n2,earlier\n";
  r = run(std::string("run") + small + " --save-params " + kept);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--save-params: '" + kept + "' exists and is not a parameters file (TBPARAM1)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(slurp(kept), "schema_version,run_id\n2,earlier\n");
  const std::string params = tmp("again.params");
  EXPECT_EQ(run(std::string("run") + small + " --save-params " + params).code, 0);
  EXPECT_EQ(run(std::string("run") + small + " --save-params " + params).code, 0) << "a params file is replaced";
  // In a suite every configuration would write the one params file: run-only.
  const std::string suite = tmp("save-params.suite");
  std::ofstream(suite) << "s: --model linear --layers 8,1 --samples 64 --batch 16 --backends cpu-omp "
                          "--save-params p.bin\n";
  r = run("suite " + suite + " --out " + tmp("save-params-run"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--save-params: not in suite files"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(tmp("save-params-run")));
}

TEST(Flags, IntegersOutOfRangeAreRefusedNamingTheFlagAndTheRange) {
  for (const char* args : {"run --threads 4294967296", "run --threads 2147483649", "run --reps 2147483648",
                           "run --epochs 0", "run --device 99999999999", "run --samples 99999999999999999"}) {
    const ShellResult r = run(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find("an integer"), std::string::npos) << args << ": " << r.out;  // --threads: "all or an integer"
  }
  const std::string suite = tmp("ws.suite");
  std::ofstream(suite) << "w: --model linear --layers 4,1 --samples 64 --batch 16 --backends cpu-ddp "
                          "--world-sizes 4294967298\n";
  const ShellResult r = run("suite " + suite + " --out " + tmp("ws-out"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--world-sizes: invalid value '4294967298' (expected an integer in [1, 4096])"),
            std::string::npos)
      << r.out;
}

TEST(HostMemory, ASizeThatCannotFitIsAFailedRowWithTheNumbers) {
  const std::string out = tmp("mem.csv");
  const ShellResult r =
      run("run --model mlp --layers 784,60000,60000,10 --samples 1000 --batch 100 --reps 1 --out " + out);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(whole_rows(out), 1u);
  EXPECT_NE(slurp(out).find("failed: out of host memory (needs ~"), std::string::npos) << slurp(out);
  EXPECT_NE(slurp(out).find(" MiB, available "), std::string::npos) << slurp(out);
}

// A suite checks every configuration as `run` does, before making its data: a failed row
// with the numbers (it was `failed: std::bad_alloc`, or the kernel's OOM killer), and the
// suite goes on; a multi-process entry counts every rank the suite starts on this host.
TEST(HostMemory, ASuiteEntryThatCannotFitIsAFailedRowWithTheNumbersAndTheSuiteGoesOn) {
  const std::string suite = tmp("mem.suite"), dir = tmp("mem-suite");
  // 1000 x 60M floats: 240 GB of data.
  std::ofstream(suite) << "big: --model linear --layers 1000,1 --samples 60000000 --batch 100 --epochs 1 --warmup 0 "
                          "--reps 1 --backends reference,cpu-omp,cpu-ddp --world-sizes 2 --threads 1\n"
                          "small: --model linear --layers 8,1 --samples 64 --batch 16 --epochs 1 --warmup 0 --reps 1 "
                          "--backends cpu-omp --threads 1\n";
  const ShellResult r = run("suite " + suite + " --no-ceilings --out " + dir);
  EXPECT_EQ(r.code, 1) << r.out;
  const auto rows = tb::test::csv_rows(dir + "/results.csv");
  ASSERT_EQ(rows.size(), 4u) << r.out;
  const tb::Backend* ddp = tb::find_backend("cpu-ddp");
  for (size_t i = 0; i < 3; ++i) {
    const std::string& status = rows[i].at("status");
    if (rows[i].at("backend") == "cpu-ddp" && !ddp->availability().ok) {
      EXPECT_EQ(status.rfind("skipped: ", 0), 0u) << status;  // built without MPI
      continue;
    }
    EXPECT_EQ(status.rfind("failed: out of host memory (needs ~", 0), 0u) << rows[i].at("backend") << ": " << status;
    EXPECT_NE(status.find(" MiB, available "), std::string::npos) << status;
  }
  EXPECT_EQ(rows[2].at("world_size"), "2");
  EXPECT_EQ(rows[3].at("workload"), "small");
  EXPECT_EQ(rows[3].at("status"), "ok");
  EXPECT_FALSE(fs::exists(dir + "/.worker-2")) << "no job launched for a configuration that cannot fit";
}

// export makes the whole dataset too: the same check, exit 1, nothing written.
TEST(HostMemory, AnExportThatCannotFitSaysSoAndWritesNothing) {
  const std::string dir = tmp("mem-export");
  const ShellResult r = run("export --model linear --layers 1000,1 --samples 60000000 --batch 100 --out " + dir);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("export: out of host memory (needs ~"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir));
  for (const auto& e : fs::directory_iterator(TB_TEST_TMPDIR)) {
    EXPECT_EQ(e.path().filename().string().rfind(".mem-export.tmp-", 0), std::string::npos) << e.path();
  }
}

// A failed row's descriptive cells are those of the configuration's rows that ran: the
// float64 reference's said fp32, and the dataset lacked its seed and noise.
TEST(HostMemory, AFailedRowDescribesItsConfigurationAsTheRowsThatRan) {
  const std::string out = tmp("mem-ref.csv");
  const std::string ref = "run --backend reference --model linear --layers 1000,1 --batch 100 --epochs 1 --warmup 0 "
                          "--reps 1 --out " + out;
  ShellResult r = run(ref + " --samples 60000000");  // 240 GB of data
  EXPECT_EQ(r.code, 1) << r.out;
  r = run(ref + " --samples 200");
  EXPECT_EQ(r.code, 0) << r.out;
  const auto rows = tb::test::csv_rows(out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("status").rfind("failed: out of host memory (needs ~", 0), 0u) << rows[0].at("status");
  EXPECT_EQ(rows[1].at("status"), "ok");
  for (const char* cell : {"precision", "dataset", "task", "devices", "world_size", "threads", "oracle"}) {
    EXPECT_EQ(rows[0].at(cell), rows[1].at(cell)) << cell;
  }
  EXPECT_EQ(rows[0].at("precision"), "fp64");
  EXPECT_EQ(rows[0].at("dataset"), "synthetic-regression(seed=1,noise=0.1)");
}

TEST(Launch, ASingleProcessBackendStartedAsSeveralRanksIsRefused) {
  const ShellResult r = tb::test::shell("OMPI_COMM_WORLD_SIZE=2 " + std::string(TB_TRAINBENCH_EXE) +
                                        " run --backend cpu-omp --samples 64 --batch 16");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("a single-process backend started as 2 processes"), std::string::npos) << r.out;
}

TEST(Help, HelpCommandIsTheCommandsHelpAndExportListsOnlyWorkloadFlags) {
  EXPECT_EQ(run("help run").out, run("run --help").out);
  EXPECT_EQ(run("help run").code, 0);
  const ShellResult e = run("export --help");
  EXPECT_EQ(e.code, 0);
  for (const char* absent : {"--backend", "--save-params", "FILE.csv", "--cuda-graph", "--world-sizes"}) {
    EXPECT_EQ(e.out.find(absent), std::string::npos) << absent << "\n" << e.out;
  }
  EXPECT_NE(e.out.find("--out DIR"), std::string::npos) << e.out;
  EXPECT_NE(run("run --help").out.find("FILE.csv.env.json"), std::string::npos);
}

}  // namespace

namespace {

TEST(DataFiles, ADirectoryIsOneLineExitTwoAndAHugeCellIsCut) {
  // (--task applies to csv only: idx data is classification by its labels file.)
  for (const std::string& spec : {"csv:" + std::string(TB_TEST_TMPDIR) + " --task classification",
                                  "idx:" + std::string(TB_TEST_TMPDIR) + "," + std::string(TB_TEST_TMPDIR)}) {
    const ShellResult r = run("run --model linear --layers 4,2 --dataset " + spec);
    EXPECT_EQ(r.code, 2) << spec << ": " << r.out;
    EXPECT_NE(r.out.find("is a directory (expected a file)"), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
  const std::string csv = tmp("huge-cell.csv");
  {
    std::ofstream f(csv);
    f << "a,b\n1," << std::string(5 << 20, 'x') << "\n";
  }
  const ShellResult r = run("run --model linear --layers 1,1 --dataset csv:" + csv);
  EXPECT_EQ(r.code, 2) << r.out.substr(0, 400);
  EXPECT_LT(r.out.size(), 1000u) << r.out.substr(0, 400);
  EXPECT_NE(r.out.find("message cut"), std::string::npos) << r.out.substr(0, 400);
}

}  // namespace
