// tests/cuda_trace/traced_run.h — running the real trainbench executable under the
// fake CUDA runtime (LD_PRELOAD of the trace shim, set for that one command only) and
// reading back its call trace. What the run prints about losses or speed is
// meaningless: nothing executes; only the trace is checked.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "tests/cuda_trace/trace.h"
#include "tests/shell.h"

namespace tb::trace {

struct TracedRun {
  int code = -1;       // trainbench's exit status
  std::string out;     // its stdout and stderr
  std::string path;    // the trace file (rank 0's for an MPI job)
  Trace trace;
  double ended_at = 0;  // CLOCK_REALTIME seconds when it had ended (test::seconds_after_fault)
};

inline std::string trace_path(const std::string& name) {
  return (std::filesystem::path(TB_TEST_TMPDIR) / ("trace-" + name)).string();
}

// `trainbench COMMAND` (prefixed by `launcher`, e.g. an mpirun line) with the shim
// preloaded, pretending to be `gpus` GPUs; `env` adds VAR=VALUE words. The trace is
// written to trace-NAME.RANK.log (rank 0 without MPI); `trace` holds rank 0's.
inline TracedRun traced_command(const std::string& name, const std::string& command, int gpus,
                                const std::string& env = "", const std::string& launcher = "") {
  const std::string base = trace_path(name);
  for (int r = 0; r < 8; ++r) std::filesystem::remove(base + "." + std::to_string(r) + ".log");
  std::filesystem::remove(base + ".csv");
  const std::string cmd = "env TB_FAKE_GPUS=" + std::to_string(gpus) + " TB_TRACE_FILE=" + base + ".%r.log " +
                          "TB_NVML_LIBRARY=none " + env +  // a driver's NVML stays out of traces
                          " LD_PRELOAD=" + TB_TRACE_SHIM + " " + launcher + TB_TRAINBENCH_EXE + " " + command;
  const test::ShellResult r = test::shell(cmd);
  TracedRun t;
  t.code = r.code;
  t.out = "$ " + cmd + "\n" + r.out;
  t.ended_at = r.ended_at;
  t.path = base + ".0.log";
  t.trace = read_trace(t.path);
  return t;
}

// `trainbench run ARGS --out trace-NAME.csv` under the shim (traced_command).
inline TracedRun traced(const std::string& name, const std::string& args, int gpus, const std::string& env = "",
                        const std::string& launcher = "") {
  return traced_command(name, "run " + args + " --out " + trace_path(name) + ".csv", gpus, env, launcher);
}

inline Trace rank_trace(const std::string& name, int rank) {
  return read_trace(trace_path(name) + "." + std::to_string(rank) + ".log");
}

// Small workloads: a classification MLP and a regression one.
inline const std::string kClassify = " --model mlp --layers 8,16,12,3 --dataset synthetic-classification ";
inline const std::string kRegress = " --model mlp --layers 8,16,4 --dataset synthetic-regression ";

}  // namespace tb::trace

// gtest checks that a list of trace problems is empty, naming the trace file and every
// problem when it is not: EXPECT_NO_PROBLEMS_AT(path, problems), and EXPECT_NO_PROBLEMS
// in a test whose TracedRun is called `run`.
#define EXPECT_NO_PROBLEMS_AT(where, problems)                                                        \
  do {                                                                                            \
    const ::tb::trace::Problems p_ = (problems);                                                  \
    EXPECT_TRUE(p_.empty()) << p_.size() << " problem(s) in " << (where) << ":\n" << ::tb::trace::report(p_); \
  } while (0)
#define EXPECT_NO_PROBLEMS(problems) EXPECT_NO_PROBLEMS_AT(run.path, problems)
