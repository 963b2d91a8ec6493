// harness/main.cpp — the `trainbench` executable: run, suite, export, backends, devices,
// launcher, schema.
// Exit codes (harness/exit_codes.h, README "Exit codes"): 0 success; 1 a run
// failed (its row says why); 2 bad input (one line naming the flag or file, nothing
// written); 3 a multi-process job was aborted; 74 an output could not be written;
// 130 / 143 SIGINT / SIGTERM.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <unistd.h>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/ceilings.h"
#include "harness/cli.h"
#include "harness/csv_writer.h"
#include "harness/env_capture.h"
#include "harness/export.h"
#include "harness/fault_plan.h"
#include "harness/folder_lock.h"
#include "harness/gpu_telemetry.h"
#include "harness/host_info.h"
#include "harness/mpi_launch.h"
#include "harness/rank_data.h"
#include "harness/runner.h"
#include "harness/exit_codes.h"
#include "harness/interrupt.h"
#include "harness/job.h"
#include "harness/result_files.h"
#include "harness/result_schema.h"
#include "harness/suite.h"
#include "kernels/cpu/gemm.h"

namespace tb {
namespace {

// An error is one line, whatever text it quotes (a flag's value or a variable may hold a
// newline): control characters as \n, \r, \t or \xNN.
std::string one_line(const std::string& s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

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
    "  schema    print the CSV schema (--markdown: the README's table; --json: reports/schema.json)\n"
    "  version   print the version\n"
    "  help      this list; `trainbench help COMMAND`, as `trainbench COMMAND --help`, shows its flags\n";

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

// The one Job of this process for configuration c: an MPI world for the
// multi-process backends (MPI starts here), else rank 0 of 1.
Job job_for(const RunConfig& c) { return make_job(traits_of(c.backend).multi_process(), c.comm_timeout_s); }

// How a run ends this process: a failure of this rank alone ends the whole job at
// once (the other ranks would wait in a collective until the watchdog's deadline).
int exit_of(const RunOutcome& o, Job& job) {
  if (!o.failed) return kExitOk;
  if (o.local_failure && job.multi_rank()) job.abort(o.failure);
  return kExitRunFailed;
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
  // The name column as wide as the longest name: a fixed 10 pushed cpu-hogwild's row out of line.
  size_t width = 0;
  for (const auto& b : all_backends()) width = std::max(width, b->name().size());
  for (const auto& b : all_backends()) {
    const Availability a = b->availability();
    std::printf("%-*s %-12s %s\n", static_cast<int>(width), b->name().c_str(), a.ok ? "available" : "unavailable:",
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
  if (args.size() != 1 || std::from_chars(args[0].data(), end, n).ptr != end || n < 1 || n > 4096) {
    throw UsageError("launcher: N: expected one integer in [1, 4096] (ranks, as --world-sizes), got '" +
                     (args.empty() ? std::string() : args[0]) + "'");
  }
  if (const std::string why = launcher_problem(); !why.empty()) throw UsageError("launcher: " + why);
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

// --out and --save-params are checked before anything trains: two outputs on one
// path, a directory, or a folder that does not exist are bad input (exit 2).
void check_outputs(const std::string& out, const std::string& save_params) {
  namespace fs = std::filesystem;
  const auto check = [](const std::string& flag, const std::string& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw UsageError(flag + ": '" + path + "' is a directory (expected a file)");
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty() && !fs::is_directory(parent, ec)) {
      throw UsageError(flag + ": the folder '" + parent.string() + "' does not exist");
    }
  };
  if (out != "-") {
    check("--out", out);
    // A suite's folder is one run (its .lock and env.json): rows of another run in its
    // results.csv would be reported without their environment and refused by compare.py.
    const fs::path parent = fs::path(out).parent_path().empty() ? fs::path(".") : fs::path(out).parent_path();
    std::error_code ec;
    const std::string name = fs::path(out).filename().string();
    if ((name == "results.csv" || name == "curves.csv") &&
        (fs::exists(parent / ".lock", ec) || fs::exists(parent / "env.json", ec))) {
      throw UsageError("--out: '" + parent.string() + "' is a suite's folder, one run with its own env.json and "
                       "run id: rows of this run in its " + name + " would have no environment; write them to another "
                       "file");
    }
  }
  if (save_params.empty()) return;
  check("--save-params", save_params);
  // Written after training: a folder it cannot be written to is known now (a read-only one).
  const fs::path parent = fs::path(save_params).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw UsageError("--save-params: cannot write into the folder '" + folder + "': " + std::strerror(errno));
  }
  // A parameters file of an earlier run is replaced; anything else (a suite's results.csv,
  // a typo naming another file) is recorded data, kept.
  std::error_code size_ec;
  if (std::ifstream in(save_params, std::ios::binary); in && fs::file_size(save_params, size_ec) > 0 && !size_ec) {
    char magic[8] = {};
    in.read(magic, sizeof magic);
    if (in.gcount() != 8 || std::string(magic, 8) != "TBPARAM1") {
      throw UsageError("--save-params: '" + save_params + "' exists and is not a parameters file (TBPARAM1): it is "
                       "not replaced; remove it or choose another path");
    }
  }
  if (out != "-") {
    // Absolute first: weakly_canonical leaves a relative path none of whose parts exists
    // as it is, so "new.csv" and "./new.csv" would differ until the file is created.
    std::error_code ec;
    const auto same = [&ec](const std::string& p) { return fs::weakly_canonical(fs::absolute(p, ec), ec); };
    const fs::path a = same(save_params), b = same(out);
    if (a == b || a == same(out + ".env.json")) {
      throw UsageError("--save-params: '" + save_params + "' is also an output of --out (" + out +
                       " and its .env.json); give them different paths");
    }
  }
}

int cmd_run(const std::vector<std::string>& args, const std::string& command_line) {
  if (wants_help(args)) {
    std::printf("usage: trainbench run [FLAGS]\n\nflags:\n%s", run_flags_help().c_str());
    return kExitOk;
  }
  RunFlags f;
  parse_run_flags(args, /*allow_lists=*/false, &f);
  validate_run_flags(&f);
  const RunConfig& c = f.config;
  const std::string out = f.out.empty() ? "-" : f.out;
  check_outputs(out, c.save_params);
  const int launched = launcher_world_size();
  if (launched > 1 && !traits_of(c.backend).multi_process()) {
    throw UsageError("--backend " + c.backend + ": a single-process backend started as " + std::to_string(launched) +
                     " processes by mpirun/srun; run it without a launcher (or with -np 1)");
  }
  // Checked now (TB_CEILINGS=2 is bad input: nothing written), measured once the run is set up.
  const std::string ceilings_off = ceilings_off_reason(f.no_ceilings, launched > 1);
  Job job = job_for(c);
  const RunIdentity id = make_run_identity();
  std::unique_ptr<ResultFiles> files;  // rank 0 writes
  // Too large for this host: no data is made, and the row says so once the outputs are
  // set up as for any run (every rank agrees).
  const std::string short_of = host_memory_status(c, job);
  // A DDP rank generates only its rows (rank_data.h). DataError -> exit 2, nothing written.
  std::unique_ptr<Dataset> data;
  if (short_of.empty()) {
    data = std::make_unique<Dataset>(load_rank_dataset(c, job.rank(), job.size()));
    if (const std::string misfit = check_data_fits(c, *data); !misfit.empty()) throw UsageError(misfit);
  }
  const std::vector<std::string> hosts = job.gather(host_record_json());  // every node of the job
  // Appending to rows that have an env.json: it describes them and is kept (replacing it
  // lost their environment). This run joins it, listed in its "appended_runs", when it
  // runs the same build on the same machine; otherwise it is refused before training.
  std::string kept_env, refused;
  // Held until the header and env.json are written: a second run started at once with
  // this --out waits here, then appends (folder_lock.h).
  std::optional<FolderLock> setup_lock;
  if (job.root() && out != "-") {
    setup_lock.emplace(out);
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::file_size(out, ec) > 0 && !ec && fs::is_regular_file(out + ".env.json", ec)) {
      std::ifstream in(out + ".env.json");
      kept_env.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      const std::string why = env_difference(kept_env, env_json(id, command_line, c.seed, hosts));
      if (!why.empty()) {
        refused = "--out: cannot append to " + out + ": " + out + ".env.json, the environment of its rows, " + why +
                  "; write this run to another file";
      }
    }
  }
  if (!job.all_ok(refused.empty())) throw UsageError(refused.empty() ? "--out: refused by rank 0" : refused);
  // Opened before training: an unwritable or mismatched file fails now, not after it.
  if (job.root()) files = std::make_unique<ResultFiles>(out, "");
  if (job.root() && out != "-") {
    try {
      if (!kept_env.empty()) {
        write_file_atomically(out + ".env.json",
                              env_with_appended_run(kept_env, env_json(id, command_line, c.seed, hosts)));
      } else {
        // The machine's ceilings (harness/ceilings.h) before anything is timed; the other
        // ranks of a multi-process run would share the cores, so not there.
        const std::string ceilings = ceilings_json(ceilings_off, id.host);
        write_file_atomically(out + ".env.json", env_json(id, command_line, c.seed, hosts, ceilings));
      }
    } catch (...) {
      files->discard_if_new();  // a full disk at start: no header-only CSV left behind
      throw;
    }
  }
  setup_lock.reset();
  if (!short_of.empty()) {
    RunConfig asked = c;
    if (job.multi_rank()) asked.world_size = job.size();  // under mpirun, -np decides (as for rows that ran)
    if (job.root()) files->add(status_row(asked, id, short_of), {});
    std::fprintf(stderr, "trainbench: %s\n", short_of.c_str());
    return kExitRunFailed;
  }
  // Each row is written as its repetition ends; with --out, one line each on stdout.
  struct Echo final : RowSink {
    ResultFiles* files = nullptr;
    bool print = false;
    void add(const ResultRow& r, const std::vector<CurvePoint>& curve) override {
      files->add(r, curve);
      if (print) {
        std::printf("%s %s rep %lld: %s", r.config.workload.c_str(), r.config.backend.c_str(),
                    static_cast<long long>(r.repetition), r.status.c_str());
        if (r.has_metrics) std::printf("  %.4g samples/s  final_loss %.6g", r.samples_per_s, r.final_loss);
        if (r.has_metrics && r.disturbed()) {
          std::printf("  DISTURBED (others %.0f%%, steal %.0f%% of the CPU time)", 100 * r.others_cpu_share,
                      100 * r.steal_share);
        }
        std::printf("\n");
        std::fflush(stdout);
      }
      if (r.status != "ok") std::fprintf(stderr, "trainbench: %s\n", r.status.c_str());
    }
  } echo;
  echo.files = files.get();
  echo.print = out != "-";
  Progress progress(job.root() && Progress::auto_enabled());
  const RunOutcome o = run_configuration(c, *data, job, id, progress, echo);
  return exit_of(o, job);  // the row is written first: an abort cannot lose it
}

int cmd_suite(const std::vector<std::string>& args, const std::string& command_line) {
  if (wants_help(args) || args.empty()) {
    std::fprintf(args.empty() ? stderr : stdout,
                 "usage: trainbench suite FILE [--out DIR] [--no-ceilings] [--dry-run]\n\n"
                 "Runs every entry of FILE (see bench/suites/) and writes DIR (default results/<run-id>/):\n"
                 "results.csv, curves.csv, env.json and log.txt. Exit 1 if any run failed.\n"
                 "env.json's \"ceilings\" are measured first (~1 s): --no-ceilings or TB_CEILINGS=0 skips them.\n"
                 "--dry-run: check FILE as the suite would (exit 2 on bad input), list its configurations\n"
                 "(runs, or skipped: why) and exit 0, running and writing nothing.\n");
    return args.empty() ? 2 : 0;
  }
  std::string file, out;
  bool no_ceilings = false, dry_run = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--out") {
      if (i + 1 >= args.size()) throw UsageError("--out: missing value (DIR)");
      out = args[++i];
      if (out.empty()) throw UsageError("--out: invalid value '' (expected a folder path)");
    } else if (args[i] == "--no-ceilings") {
      no_ceilings = true;
    } else if (args[i] == "--dry-run") {
      dry_run = true;
    } else if (args[i].rfind("--", 0) == 0) {
      throw UsageError("unknown flag '" + args[i] + "' for suite (allowed: --out DIR, --no-ceilings, --dry-run)");
    } else if (file.empty()) {
      file = args[i];
    } else {
      throw UsageError("suite takes one FILE (got '" + file + "' and '" + args[i] + "')");
    }
  }
  if (file.empty()) throw UsageError("suite: missing FILE (e.g. bench/suites/quick.suite)");
  return dry_run ? list_suite(file, out, no_ceilings) : run_suite(file, out, command_line, no_ceilings);
}

}  // namespace
}  // namespace tb

int main(int argc, char** argv) {
  using namespace tb;
#if defined(__GLIBC__)
  // A fixed mmap threshold: glibc otherwise raises it to the size of the largest block
  // freed so far (up to 32 MiB), so after one suite configuration freed its dataset,
  // the next one's buffers came from the heap instead of fresh page-aligned mappings,
  // and cpu-omp's 2-thread small MLP ran at 150-220k samples/s instead of 260-300k
  // (issue #18; docs/performance.md). Every configuration now allocates as the first did.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
  std::vector<std::string> args(argv + 1, argv + argc);
  // `help COMMAND` is `COMMAND --help`; `help help` (or `help --help`) is `help`.
  if (args.size() >= 2 && args[0] == "help") {
    const bool about_help = args[1] == "help" || args[1] == "--help" || args[1] == "-h";
    args = about_help ? std::vector<std::string>{"help"} : std::vector<std::string>{args[1], "--help"};
  }
  const std::string command_line = join_command_line(argc, argv);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || (args[0] == "help" && args.size() == 1)) {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitBadInput : kExitOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  // A file size limit (ulimit -f) is a failed write (EFBIG) that the CSV writer cuts
  // back and reports, not a silent death by SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  // Bad input is bad input on every rank of a job (they all parse the same flags and
  // files), so each exits 2 by itself; any other error this process meets alone ends
  // the whole job (abort_multi_rank_job).
  const auto fail = [](int code, const std::string& what) {
    std::fprintf(stderr, "trainbench: %s\n", one_line(what).c_str());
    end_job();
    return code;
  };
  try {
    int code = kExitOk;
    // A terminal's Ctrl-C or a scheduler's SIGTERM ends a run or suite cleanly
    // (interrupt.h); MPI ranks keep the default action (their launcher ends them).
    if ((args[0] == "run" && launcher_world_size() == 1) || args[0] == "suite") install_interrupt_handlers();
    // TB_CPU_GEMM_KERNEL (kernels/cpu/gemm.h) is read once, at the first GEMM; TB_NVML_SAMPLE_MS
    // on GPU machines only, as a GPU run starts; TB_FAULT by the trainers that take faults
    // (in a suite, inside a configuration: a `failed:` row, or ranks that never formed the
    // job). A bad value is bad input before any file is opened, on any machine and for
    // any backend, not an error halfway through or a silent default.
    // `--help` prints the flags whatever the environment: it runs nothing.
    if ((args[0] == "run" || args[0] == "suite" || args[0] == "suite-worker") && !wants_help(rest)) {
      try {
        (void)cpu::gemm_config();
        (void)sample_interval_ms();
        (void)fault_from_env();
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
    }
    if (args[0] == "run") {
      code = cmd_run(rest, command_line);
    } else if (args[0] == "suite-worker") {
      code = run_suite_worker(rest);
    } else if (args[0] == "suite") {
      code = cmd_suite(rest, command_line);
    } else if (args[0] == "export") {
      if (wants_help(rest)) {
        std::printf("usage: trainbench export [FLAGS] --out DIR\n\n"
                    "Writes DIR/data.bin, params.bin, workload.json (and orders.bin with --shuffle) for the\n"
                    "workload the `run` flags describe; nothing is trained (formats: harness/export.h).\n"
                    "DIR must not exist (or be empty). The rest of `run`'s flags (a backend's knobs,\n"
                    "--comm-timeout, --no-ceilings; not its backend or parameters file) are accepted, so that a\n"
                    "suite line exports as written; of them only --precision is kept (in workload.json, for the\n"
                    "PyTorch peers).\n\n"
                    "flags:\n%s",
                    run_flags_help(/*for_export=*/true).c_str());
        return kExitOk;
      }
      code = cmd_export(rest);
    } else if (args[0] == "backends") {
      code = cmd_backends(rest);
    } else if (args[0] == "devices") {
      code = cmd_devices(rest);
    } else if (args[0] == "launcher") {
      code = cmd_launcher(rest);
    } else if (args[0] == "schema") {
      code = cmd_schema(rest);
    } else if (args[0] == "version" || args[0] == "--version") {
      if (no_flags(rest, "usage: trainbench version\n\nPrints the version.\n")) {
        std::printf("trainbench %s\n", TB_VERSION_STRING);
      }
    } else {
      return fail(kExitBadInput, "unknown command '" + args[0] + "' (allowed: run, suite, export, backends, devices, "
                                                                 "launcher, schema, version, help)");
    }
    end_job();
    return code;
  } catch (const UsageError& e) {
    return fail(kExitBadInput, e.what());
  } catch (const DataError& e) {
    return fail(kExitBadInput, std::string("--dataset: ") + e.what());
  } catch (const CsvError& e) {
    return fail(kExitBadInput, e.what());
  } catch (const Interrupted& e) {
    return fail(128 + e.signal(), e.what());
  } catch (const OutputError& e) {
    abort_multi_rank_job(e.what(), kExitIoError);
    return fail(kExitIoError, e.what());
  } catch (const std::exception& e) {
    abort_multi_rank_job(std::string("error: ") + e.what());
    return fail(kExitRunFailed, std::string("error: ") + e.what());
  }
}
