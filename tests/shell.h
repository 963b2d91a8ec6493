// tests/shell.h — running the built executables from tests: a command's exit code,
// its stdout and stderr together, and how long it took; the mpirun line the suite
// itself uses (harness/mpi_launch.h) for multi-process tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <string>

#include "harness/mpi_launch.h"

namespace tb::test {

struct ShellResult {
  int code = -1;     // exit status; 128 + signal when killed
  std::string out;   // stdout and stderr
  double seconds = 0;
};

inline ShellResult shell(const std::string& cmd) {
  const auto t0 = std::chrono::steady_clock::now();
  ShellResult r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// `trainbench ARGS` (the executable this build made).
inline ShellResult trainbench(const std::string& args) { return shell(std::string(TB_TRAINBENCH_EXE) + " " + args); }

// "mpirun -np N <flags> " as the suite launches it (TB_MPIRUN / TB_MPIRUN_FLAGS apply).
inline std::string mpirun(int np) {
  std::string s;
  for (const std::string& w : mpirun_prefix(np)) s += w + " ";
  return s;
}

}  // namespace tb::test
