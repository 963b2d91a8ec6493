// tests/harness/test_suite_progress.cpp — a suite on a terminal shows which
// configuration runs ("[k/N]") and how long the rest of the suite should take, also
// while a multi-process configuration runs (its rank 0's line, handed over through
// TB_PROGRESS_FILE); TB_PROGRESS=0/1 override the terminal test.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/shell.h"

namespace {

namespace fs = std::filesystem;

using tb::test::tmp;  // tests/shell.h

// Output of `cmd` run on a pseudo-terminal (util-linux `script`), CI unset.
std::string on_a_terminal(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(("env -u CI script -qec '" + cmd + "' /dev/null 2>&1").c_str(), "r");
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

TEST(SuiteProgress, ATerminalSeesTheConfigurationNumberTheSuitesEtaAndTheRanksProgress) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "util-linux `script` not installed";
  const std::string suite = tmp("progress.suite");
  std::ofstream(suite) << "a: --model mlp --layers 16,32,4 --samples 20000 --batch 32 --epochs 1 --warmup 0 --reps 1 "
                          "--backends cpu-omp --threads 1\n"
                          "b: --model mlp --layers 16,32,4 --samples 20000 --batch 32 --epochs 2 --warmup 0 --reps 1 "
                          "--backends cpu-ddp --world-sizes 2 --threads 1\n";
  const std::string out =
      on_a_terminal(std::string(TB_TRAINBENCH_EXE) + " suite " + suite + " --out " + tmp("progress-run"));
  EXPECT_NE(out.find("[1/2] cpu-omp a"), std::string::npos) << out;
  // The MPI job's rank 0 line, redrawn by the suite, with the suite's ETA after the first configuration.
  EXPECT_NE(out.find("[2/2] cpu-ddp b"), std::string::npos) << out;
  EXPECT_NE(out.find("(suite: ~"), std::string::npos) << out;
}

TEST(SuiteProgress, TbProgressForcesTheLineOnOrOff) {
  const std::string cmd = std::string(TB_TRAINBENCH_EXE) +
                          " run --model linear --layers 8,1 --samples 20000 --batch 16 --epochs 1 --reps 1 --warmup 0";
  const tb::test::ShellResult on = tb::test::shell("TB_PROGRESS=1 " + cmd + " --out " + tmp("forced.csv"));
  EXPECT_NE(on.out.find("ETA"), std::string::npos) << on.out;
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "util-linux `script` not installed";
  const std::string off = on_a_terminal("TB_PROGRESS=0 " + cmd);
  EXPECT_EQ(off.find("ETA"), std::string::npos) << off;
}

}  // namespace
