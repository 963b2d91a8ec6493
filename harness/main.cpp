// harness/main.cpp — the `trainbench` executable: run, suite, backends, devices.
// Exit codes: 0 success; 1 a run failed (its row says why); 2 bad input (one
// line naming the flag or file, nothing written).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/cli.h"
#include "harness/csv_writer.h"
#include "harness/env_capture.h"
#include "harness/host_info.h"
#include "harness/runner.h"
#include "harness/suite.h"

namespace tb {
namespace {

constexpr const char* kUsage =
    "usage: trainbench COMMAND [FLAGS]\n"
    "\n"
    "commands:\n"
    "  run       train one configuration, R timed repetitions, CSV rows out\n"
    "  suite     run a grid from a suite file into results/<run-id>/\n"
    "  backends  list every backend, available or not, with the reason\n"
    "  devices   describe this machine's CPU, memory and GPUs\n"
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
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

int cmd_backends() {
  for (const auto& b : all_backends()) {
    const Availability a = b->availability();
    std::printf("%-10s %-12s %s\n", b->name().c_str(), a.ok ? "available" : "unavailable:",
                a.ok ? b->description().c_str() : a.reason.c_str());
  }
  return 0;
}

int cmd_devices() {
  std::fputs(format_devices(host_info(), gpu_inventory()).c_str(), stdout);
  return 0;
}

int cmd_run(const std::vector<std::string>& args, const std::string& command_line) {
  if (wants_help(args)) {
    std::printf("usage: trainbench run [FLAGS]\n\nflags:\n%s", run_flags_help().c_str());
    return 0;
  }
  RunFlags f;
  parse_run_flags(args, /*allow_lists=*/false, &f);
  validate_run_flags(&f);
  const RunConfig& c = f.config;
  const Dataset data = load_dataset(c.data);  // DataError -> exit 2, nothing written
  if (const std::string misfit = check_data_fits(c, data); !misfit.empty()) throw UsageError(misfit);

  const RunIdentity id = make_run_identity();
  const std::string out = f.out.empty() ? "-" : f.out;
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
  return o.failed ? 1 : 0;
}

int cmd_suite(const std::vector<std::string>& args, const std::string& command_line) {
  if (wants_help(args) || args.empty()) {
    std::printf(
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
    if (args[0] == "run") return cmd_run(rest, command_line);
    if (args[0] == "suite") return cmd_suite(rest, command_line);
    if (args[0] == "backends") return cmd_backends();
    if (args[0] == "devices") return cmd_devices();
    if (args[0] == "version" || args[0] == "--version") {
      std::printf("trainbench %s\n", TB_VERSION_STRING);
      return 0;
    }
    std::fprintf(stderr, "trainbench: unknown command '%s' (allowed: run, suite, backends, devices, version)\n",
                 args[0].c_str());
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "trainbench: %s\n", e.what());
    return 2;
  } catch (const DataError& e) {
    std::fprintf(stderr, "trainbench: --dataset: %s\n", e.what());
    return 2;
  } catch (const CsvError& e) {
    std::fprintf(stderr, "trainbench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainbench: error: %s\n", e.what());
    return 1;
  }
}
