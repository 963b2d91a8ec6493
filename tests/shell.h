// tests/shell.h — running the built executables from tests: a command's exit code,
// its stdout and stderr together, how long it took and when it ended; how long a job
// took to end after its injected fault (harness/ddp_plan.h announces the fault's time);
// the mpirun line the suite itself uses (harness/mpi_launch.h) for multi-process tests.
#pragma once

#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "harness/mpi_launch.h"

namespace tb::test {

struct ShellResult {
  int code = -1;     // exit status; 128 + signal when killed
  std::string out;   // stdout and stderr
  double seconds = 0;
  double ended_at = 0;  // CLOCK_REALTIME seconds when the command had ended
};

inline double wall_clock_now() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

inline ShellResult shell(const std::string& cmd) {
  const auto t0 = std::chrono::steady_clock::now();
  ShellResult r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.ended_at = wall_clock_now();
  return r;
}

// Seconds from the first "trainbench: fault injected at <seconds>" line in the output to
// the command's end; negative when no fault was announced. Bounding this, not the whole
// job's time, keeps start-up on a loaded machine (mpirun, a cold cache) out of the bound.
inline double seconds_after_fault(const std::string& out, double ended_at) {
  const std::string tag = "trainbench: fault injected at ";
  const size_t at = out.find(tag);
  if (at == std::string::npos) return -1;
  return ended_at - std::strtod(out.c_str() + at + tag.size(), nullptr);
}
inline double seconds_after_fault(const ShellResult& r) { return seconds_after_fault(r.out, r.ended_at); }

// `trainbench ARGS` (the executable this build made).
inline ShellResult trainbench(const std::string& args) { return shell(std::string(TB_TRAINBENCH_EXE) + " " + args); }

// "mpirun -np N <flags> " as the suite launches it (TB_MPIRUN / TB_MPIRUN_FLAGS apply).
inline std::string mpirun(int np) {
  std::string s;
  for (const std::string& w : mpirun_prefix(np)) s += w + " ";
  return s;
}

// `base` (" --flag value --switch ...") with the flags of `extra` put in, since trainbench
// refuses a flag given twice: a flag base has takes extra's value, the others are added at
// the end. A word after a flag is its value unless it starts with "--". Leading space kept.
inline std::string with_flags(const std::string& base, const std::string& extra) {
  using Flags = std::vector<std::pair<std::string, std::string>>;  // (flag, " value" or "")
  const auto parse = [](const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> w;
    for (std::string t; in >> t;) w.push_back(t);
    Flags f;
    for (size_t i = 0; i < w.size(); ++i) {
      const bool valued = i + 1 < w.size() && w[i + 1].rfind("--", 0) != 0;
      f.emplace_back(w[i], valued ? " " + w[i + 1] : "");
      i += valued;
    }
    return f;
  };
  Flags out = parse(base);
  for (const auto& [flag, value] : parse(extra)) {
    const auto same = std::find_if(out.begin(), out.end(), [&](const auto& f) { return f.first == flag; });
    if (same != out.end()) same->second = value;
    else out.emplace_back(flag, value);
  }
  std::string s;
  for (const auto& [flag, value] : out) s += " " + flag + value;
  return s;
}

#if defined(TB_TEST_TMPDIR)
// A fresh path NAME under the tests' scratch folder (whatever was there is removed).
inline std::string tmp(const std::string& name) {
  const std::filesystem::path p = std::filesystem::path(TB_TEST_TMPDIR) / name;
  std::filesystem::remove_all(p);
  return p.string();
}
#endif

}  // namespace tb::test
