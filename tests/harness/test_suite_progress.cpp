// tests/harness/test_suite_progress.cpp — a suite on a terminal shows which
// configuration runs ("[k/N]") and how long the rest of the suite should take, also
// while a multi-process configuration runs (its rank 0's line, handed over through
// TB_PROGRESS_FILE); TB_PROGRESS=0/1 override the terminal test; a line never wraps.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "harness/progress.h"
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
  EXPECT_NE(out.find("(suite after this: ~"), std::string::npos) << out;
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

// Each redraw (after "\r\033[K") is narrower than the terminal: a wrapped line would leave
// its first part on screen at every redraw. CI=false is not CI.
TEST(SuiteProgress, EachLineFitsTheTerminalAndCiFalseIsNotCi) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "util-linux `script` not installed";
  const std::string out = on_a_terminal("stty cols 60; CI=false " + std::string(TB_TRAINBENCH_EXE) +
                                        " run --backend cpu-omp --model mlp --layers 64,128,10 "
                                        "--samples 20000 --batch 32 --epochs 2 --reps 1 --warmup 0 --out " +
                                        tmp("narrow.csv"));
  ASSERT_NE(out.find("ETA"), std::string::npos) << out;
  size_t drawn = 0;
  for (size_t at = out.find("\033[K"); at != std::string::npos; at = out.find("\033[K", at + 1)) {
    const size_t from = at + 3, end = out.find_first_of("\r\n", from);
    const std::string line = out.substr(from, end == std::string::npos ? std::string::npos : end - from);
    if (line.find("ETA") == std::string::npos) continue;  // the final clear, then stdout's row lines
    ++drawn;
    EXPECT_LT(line.size(), 60u) << line;
  }
  EXPECT_GT(drawn, 0u) << out;
}

TEST(FitToWidth, KeepsTheHeadAndTheTailAndNeverSplitsACharacter) {
  const std::string fits = "cpu-omp  loss 0.5  ETA 3 s";
  EXPECT_EQ(tb::fit_to_width(fits, 80), fits);
  const std::string wide = "[2/9] cpu-omp mlp-784x256x256x10-60k-b256 t2 rep 1/5  epoch 1/3  step 17/235  "
                           "loss 0.41  1.2e+05 samples/s  ETA 12 s  (suite after this: ~340 s)";
  const std::string cut = tb::fit_to_width(wide, 60);
  EXPECT_LT(cut.size(), 60u);
  EXPECT_EQ(cut.rfind("[2/9] cpu-omp", 0), 0u) << cut;
  EXPECT_NE(cut.find("(suite after this: ~340 s)"), std::string::npos) << cut;
  // "é" is two bytes: wherever the cut falls, no lone continuation byte is left.
  std::string accents;
  for (int i = 0; i < 60; ++i) accents += "\xc3\xa9";
  const std::string a = tb::fit_to_width(accents, 41);
  EXPECT_LT(a.size(), 41u);
  for (size_t i = 0; i < a.size(); ++i) {
    const auto b = static_cast<unsigned char>(a[i]);
    if ((b & 0xC0) == 0x80) {
      ASSERT_GT(i, 0u);
      EXPECT_EQ(static_cast<unsigned char>(a[i - 1]), 0xC3u) << "lone continuation byte at " << i;
    }
  }
}

}  // namespace
