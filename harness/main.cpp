// harness/main.cpp — the `trainbench` executable: run, suite, export, backends, devices.
// Exit codes: 0 success; 1 a run failed (its row says why); 2 bad input (one
// line naming the flag or file, nothing written).
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/cli.h"
#include "harness/csv_writer.h"
#include "harness/env_capture.h"
#include "harness/export.h"
#include "harness/host_info.h"
#include "harness/mpi_launch.h"
#include "harness/rank_data.h"
#include "harness/runner.h"
#include "harness/suite.h"
#if defined(TB_HAVE_MPI)
#include "harness/comm/mpi_session.h"
#endif

namespace tb {
namespace {

constexpr const char* kUsage =
    "usage: trainbench COMMAND [FLAGS]\n"
    "\n"
    "commands:\n"
    "  run       train one configuration, R timed repetitions, CSV rows out\n"
    "  suite     run a grid from a suite file into results/<run-id>/\n"
    "  export    write a workload's data, initial parameters and batch order to a folder\n"
    "  backends  list every backend, available or not, with the reason\n"
    "  devices   describe this machine's CPU, memory and GPUs\n"
    "  launcher  print the launcher line the suite starts N ranks with (mpirun or srun)\n"
    "  version   print the version\n"
    "\n"
    "`trainbench COMMAND --help` shows a command's flags.\n";

bool wants_help(const std::vector<std::string>& a) {
  for (const std::string& s : a) {
    if (s == "--help" || s == "-h") return true;
  }
  return false;
}

std::string join_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    s += argv[i];
  }
  return s;
}

// This process's rank and the world size for multi-process backends (starts MPI
// for them), else 0 of 1.
struct RankOf {
  int rank = 0, world = 1;
};
RankOf process_rank(const RunConfig& c) {
#if defined(TB_HAVE_MPI)
  if (multi_process(c.backend)) {
    const auto w = mpi_world(c.comm_timeout_s);
    return RankOf{w->rank(), w->size()};
  }
#else
  (void)c;
#endif
  return RankOf{};
}

// The data this process trains on: a DDP rank generates only its rows (rank_data.h).
Dataset load_process_dataset(const RunConfig& c) {
  const RankOf me = process_rank(c);
  return load_rank_dataset(c, me.rank, me.world);
}

// Ends the process: a multi-rank job whose rank stops on an error must take the
// others down with it (they would wait in a collective); otherwise finalise MPI.
int finish(int code, const std::string& why) {
#if defined(TB_HAVE_MPI)
  if (code != 0 && !why.empty() && mpi_active()) {
    auto world = mpi_world(0);
    if (world->size() > 1) world->abort(code, why);
  }
  mpi_finalize_if_initialised();
#else
  (void)why;
#endif
  return code;
}

// A command's exit code, and why a multi-process job must be aborted ("" when not).
struct CmdExit {
  int code = 0;
  std::string abort_why;
};

// How a run ends this process: a failure of this rank alone takes the whole job down
// at once (finish() aborts), rather than leaving the other ranks in a collective until
// the watchdog's deadline.
CmdExit exit_of(const RunOutcome& o) {
  if (!o.failed) return {};
  if (!o.local_failure || o.rows.empty()) return {1, ""};
  return {1, o.rows.front().status};  // abort() prints it as "rank R: <status>"
}

// `suite-worker FILE INDEX RUN_ID TIMESTAMP DIR` (internal): one configuration of a
// suite, started by the suite under mpirun; rank 0 writes DIR/results.csv and curves.csv.
CmdExit cmd_suite_worker(const std::vector<std::string>& a) {
  if (a.size() != 5) throw UsageError("suite-worker: internal command (FILE INDEX RUN_ID TIMESTAMP DIR)");
  const std::vector<RunConfig> configs = expand_suite(parse_suite(a[0]));
  const size_t index = std::stoul(a[1]);
  if (index >= configs.size()) throw UsageError("suite-worker: INDEX out of range");
  const RunConfig& c = configs[index];
  RunIdentity id = make_run_identity();
  id.run_id = a[2];
  id.timestamp = a[3];
  const Dataset data = load_process_dataset(c);
  if (const std::string misfit = check_data_fits(c, data); !misfit.empty()) throw UsageError(misfit);
  const bool root = process_rank(c).rank == 0;
  Progress silent(false);
  const RunOutcome o = run_configuration(c, data, id, silent);
  if (root) {
    CsvWriter results(a[4] + "/results.csv", results_header());
    CsvWriter curves(a[4] + "/curves.csv", curves_header());
    for (const ResultRow& r : o.rows) results.append(result_fields(r));
    for (const CurvePoint& p : o.curves) curves.append(curve_fields(o.rows.front(), p));
  }
  return exit_of(o);
}

// Commands without flags: --help prints `usage`, anything else is bad input.
bool no_flags(const std::vector<std::string>& args, const char* usage) {
  if (wants_help(args)) {
    std::printf("%s", usage);
    return false;
  }
  if (!args.empty()) throw UsageError("unknown argument '" + args[0] + "' (this command takes none; see --help)");
  return true;
}

int cmd_backends(const std::vector<std::string>& args) {
  if (!no_flags(args, "usage: trainbench backends\n\nLists every backend, available or not, with the reason.\n")) {
    return 0;
  }
  for (const auto& b : all_backends()) {
    const Availability a = b->availability();
    std::printf("%-10s %-12s %s\n", b->name().c_str(), a.ok ? "available" : "unavailable:",
                a.ok ? b->description().c_str() : a.reason.c_str());
  }
  return 0;
}

// `launcher N`: the words the suite puts before a multi-process run (harness/mpi_launch.h),
// one line, so scripts (make bench's NCCL sweep) start ranks exactly as the suite does.
int cmd_launcher(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::printf("usage: trainbench launcher N\n\nPrints the command line that starts N ranks as the suite does: "
                "TB_MPIRUN (default the\nconfigured mpirun) with -np N and one-node flags, or srun -n N; "
                "TB_MPIRUN_FLAGS replaces\nthe flags.\n");
    return 0;
  }
  int n = 0;
  const char* end = args.empty() ? nullptr : args[0].data() + args[0].size();
  if (args.size() != 1 || std::from_chars(args[0].data(), end, n).ptr != end || n < 1) {
    throw UsageError("launcher: N: expected one positive integer (ranks), got '" +
                     (args.empty() ? std::string() : args[0]) + "'");
  }
  std::string line;
  for (const std::string& w : mpirun_prefix(n)) line += (line.empty() ? "" : " ") + w;
  std::printf("%s\n", line.c_str());
  return 0;
}

int cmd_devices(const std::vector<std::string>& args) {
  if (!no_flags(args, "usage: trainbench devices\n\nDescribes this machine's CPU, memory and GPUs (or why none).\n")) {
    return 0;
  }
  std::fputs(format_devices(host_info(), gpu_inventory(FreeMemory::kAllDevices)).c_str(), stdout);
  return 0;
}

CmdExit cmd_run(const std::vector<std::string>& args, const std::string& command_line) {
  if (wants_help(args)) {
    std::printf("usage: trainbench run [FLAGS]\n\nflags:\n%s", run_flags_help().c_str());
    return {};
  }
  RunFlags f;
  parse_run_flags(args, /*allow_lists=*/false, &f);
  validate_run_flags(&f);
  const RunConfig& c = f.config;
  const Dataset data = load_process_dataset(c);  // DataError -> exit 2, nothing written
  if (const std::string misfit = check_data_fits(c, data); !misfit.empty()) throw UsageError(misfit);

  const RunIdentity id = make_run_identity();
  const std::string out = f.out.empty() ? "-" : f.out;
  // Multi-process backends: every rank trains, rank 0 alone writes.
  if (process_rank(c).rank != 0) {
    Progress silent(false);
    return exit_of(run_configuration(c, data, id, silent));
  }
  CsvWriter csv(out, results_header());  // opened before training: an unwritable file fails now
  if (out != "-") write_file_atomically(out + ".env.json", env_json(id, command_line, c.seed));
  Progress progress(Progress::auto_enabled());
  const RunOutcome o = run_configuration(c, data, id, progress);
  for (const ResultRow& r : o.rows) {
    csv.append(result_fields(r));
    if (out != "-") {
      std::printf("%s %s rep %lld: %s", c.workload.c_str(), c.backend.c_str(), static_cast<long long>(r.repetition),
                  r.status.c_str());
      if (r.has_metrics) std::printf("  %.4g samples/s  final_loss %.6g", r.samples_per_s, r.final_loss);
      std::printf("\n");
    }
    if (r.status != "ok") std::fprintf(stderr, "trainbench: %s\n", r.status.c_str());
  }
  return exit_of(o);  // the row is written first: an abort cannot lose it
}

int cmd_suite(const std::vector<std::string>& args, const std::string& command_line) {
  if (wants_help(args) || args.empty()) {
    std::fprintf(args.empty() ? stderr : stdout,
                 "usage: trainbench suite FILE [--out DIR]\n\n"
                 "Runs every entry of FILE (see bench/suites/) and writes DIR (default results/<run-id>/):\n"
                 "results.csv, curves.csv, env.json and log.txt. Exit 1 if any run failed.\n");
    return args.empty() ? 2 : 0;
  }
  std::string file, out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--out") {
      if (i + 1 >= args.size()) throw UsageError("--out: missing value (DIR)");
      out = args[++i];
    } else if (args[i].rfind("--", 0) == 0) {
      throw UsageError("unknown flag '" + args[i] + "' for suite (allowed: --out DIR)");
    } else if (file.empty()) {
      file = args[i];
    } else {
      throw UsageError("suite takes one FILE (got '" + file + "' and '" + args[i] + "')");
    }
  }
  if (file.empty()) throw UsageError("suite: missing FILE (e.g. bench/suites/quick.suite)");
  return run_suite(file, out, command_line);
}

}  // namespace
}  // namespace tb

int main(int argc, char** argv) {
  using namespace tb;
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::string command_line = join_command_line(argc, argv);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (args[0] == "run") {
      const CmdExit e = cmd_run(rest, command_line);
      return finish(e.code, e.abort_why);
    }
    if (args[0] == "suite-worker") {
      const CmdExit e = cmd_suite_worker(rest);
      return finish(e.code, e.abort_why);
    }
    if (args[0] == "suite") return cmd_suite(rest, command_line);
    if (args[0] == "export") {
      if (wants_help(rest)) {
        std::printf("usage: trainbench export [FLAGS] --out DIR\n\n"
                    "Writes DIR/data.bin, params.bin, workload.json (and orders.bin with --shuffle) for the\n"
                    "workload the `run` flags describe; nothing is trained (formats: harness/export.h).\n"
                    "DIR must not exist (or be empty). --backend and --save-params do not apply.\n\nflags:\n%s",
                    run_flags_help().c_str());
        return 0;
      }
      return cmd_export(rest);
    }
    if (args[0] == "backends") return cmd_backends(rest);
    if (args[0] == "devices") return cmd_devices(rest);
    if (args[0] == "launcher") return cmd_launcher(rest);
    if (args[0] == "version" || args[0] == "--version") {
      std::printf("trainbench %s\n", TB_VERSION_STRING);
      return 0;
    }
    std::fprintf(stderr, "trainbench: unknown command '%s' (allowed: run, suite, export, backends, devices, launcher, version)\n",
                 args[0].c_str());
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "trainbench: %s\n", e.what());
    return finish(2, e.what());
  } catch (const DataError& e) {
    std::fprintf(stderr, "trainbench: --dataset: %s\n", e.what());
    return finish(2, e.what());
  } catch (const CsvError& e) {
    std::fprintf(stderr, "trainbench: %s\n", e.what());
    return finish(2, e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainbench: error: %s\n", e.what());
    return finish(1, e.what());
  }
}
