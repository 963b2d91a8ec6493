// harness/suite.cpp — parse, expand and run suite files; print the summary table.
#include "harness/suite.h"
#include "harness/ceilings.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>

#include "harness/backend.h"
#include "harness/csv_writer.h"
#include "harness/exit_codes.h"
#include "harness/rank_data.h"
#include "harness/result_files.h"
#include "harness/result_schema.h"
#include "harness/ddp_plan.h"
#include "harness/host_info.h"
#include "harness/host_memory.h"
#include "harness/interrupt.h"
#include "harness/mpi_launch.h"
#include "harness/runner.h"

namespace tb {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Relative tolerance on final_loss for "matches reference" in the summary; the
// same value the report uses (reports/). float32 vs float64 after a few epochs
// differs by ~1e-6..1e-4 relative; a real bug moves the loss far more.
constexpr double kLossRelTol = 1e-3;

// One line per configuration: its workload, setup and knob cells (result_schema.h), so
// two entries differing only by a knob are two lines, each ending with the cells that
// tell it from its look-alikes. Reference = the oracle's row with the same workload cells.
void print_summary(const std::vector<ResultRow>& rows, std::FILE* out) {
  using Cells = std::vector<std::pair<std::string, std::string>>;
  struct Shown {
    std::string workload, backend;
    int threads, world;
    bool operator<(const Shown& o) const {
      return std::tie(workload, backend, threads, world) < std::tie(o.workload, o.backend, o.threads, o.world);
    }
  };
  std::map<Cells, std::vector<const ResultRow*>> groups;
  std::map<Cells, double> ref_loss;  // by workload cells
  std::map<Shown, std::vector<Cells>> alike;
  std::vector<Cells> order;
  for (const ResultRow& r : rows) {
    Cells k = configuration_cells(r, {ColumnRole::kWorkload, ColumnRole::kSetup, ColumnRole::kKnob});
    if (!groups.count(k)) {
      order.push_back(k);
      alike[{r.config.workload, r.config.backend, r.config.threads, r.world_size}].push_back(k);
    }
    groups[k].push_back(&r);
  }
  for (auto& [k, g] : groups) {
    const ResultRow& first = *g.front();
    if (!find_backend(first.config.backend) || !traits_of(first.config.backend).oracle) continue;
    std::vector<double> l;
    for (const ResultRow* r : g) {
      if (r->has_metrics) l.push_back(r->final_loss);
    }
    const Cells w = configuration_cells(first, {ColumnRole::kWorkload});
    if (!l.empty() && !ref_loss.count(w)) ref_loss[w] = median(l);
  }
  // "shuffle=true" for a configuration whose look-alikes differ from it in shuffle.
  std::map<Cells, std::string> differs;
  for (const auto& [shown, keys] : alike) {
    if (keys.size() < 2) continue;
    for (const Cells& k : keys) {
      for (size_t i = 0; i < k.size(); ++i) {
        const bool same = std::all_of(keys.begin(), keys.end(), [&](const Cells& o) { return o[i] == k[i]; });
        if (!same) differs[k] += " " + k[i].first + "=" + k[i].second;
      }
    }
  }
  std::fprintf(out, "\n%-32s %-11s %5s %7s %14s %12s %9s  %s\n", "workload", "backend", "ranks", "threads",
               "samples/s(med)", "final_loss", "accuracy", "matches reference");
  for (const Cells& k : order) {
    const auto& g = groups[k];
    const ResultRow& first = *g.front();
    const char* workload = first.config.workload.c_str();
    const char* backend = first.config.backend.c_str();
    const std::string note = differs.count(k) ? " " + differs[k] : "";
    std::vector<double> sps, loss, acc;
    std::string status;
    for (const ResultRow* r : g) {
      if (!r->has_metrics) {
        status = r->status;
        continue;
      }
      sps.push_back(r->samples_per_s);
      loss.push_back(r->final_loss);
      if (r->final_accuracy >= 0) acc.push_back(r->final_accuracy);
    }
    if (sps.empty()) {
      std::fprintf(out, "%-32s %-11s %5d %7d %14s %12s %9s  %s%s\n", workload, backend, first.world_size,
                   first.config.threads, "-", "-", "-", status.c_str(), note.c_str());
      continue;
    }
    std::string match = "no reference run";
    const auto it = ref_loss.find(configuration_cells(first, {ColumnRole::kWorkload}));
    if (it != ref_loss.end()) {
      const double rel = std::fabs(median(loss) - it->second) / std::max(std::fabs(it->second), 1e-12);
      // An asynchronous backend (Hogwild!) is checked within its own, wider bound; with
      // momentum, asynchrony adds momentum of its own and it is not checked (README "Hogwild!").
      const bool async = find_backend(first.config.backend) && traits_of(first.config.backend).asynchronous;
      char b[40];
      std::snprintf(b, sizeof b, "(rel diff %.1e)", rel);
      if (async && first.world_size > 1 && first.config.momentum != 0) {
        match = std::string("not checked: asynchronous with momentum ") + b;
      } else if (async) {
        match = std::string(rel <= kAsyncLossRelTol ? "yes" : "NO") + ", asynchronous: bound " +
                std::to_string(static_cast<int>(kAsyncLossRelTol * 100)) + "% " + b;
      } else {
        match = std::string(rel <= kLossRelTol ? "yes " : "NO ") + b;
      }
    }
    char accs[16] = "-";
    if (!acc.empty()) std::snprintf(accs, sizeof accs, "%.4f", median(acc));
    std::fprintf(out, "%-32s %-11s %5d %7d %14.4g %12.6g %9s  %s%s\n", workload, backend, first.world_size,
                 first.config.threads, median(sps), median(loss), accs, match.c_str(), note.c_str());
  }
}

// The summary's view of rows a worker wrote: status, repetition, the setup cells the
// worker learned (world size, devices, precision, dataset) and the metrics.
std::vector<ResultRow> parse_rows(const std::vector<std::string>& lines, const RunConfig& c, const RunIdentity& id) {
  const std::vector<std::string> header = results_header();
  auto col = [&](const std::vector<std::string>& f, const char* name) -> const std::string& {
    const auto it = std::find(header.begin(), header.end(), name);
    return f.at(static_cast<size_t>(it - header.begin()));
  };
  std::vector<ResultRow> rows;
  for (const std::string& line : lines) {
    const std::vector<std::string> f = csv_fields(line);
    if (f.size() != header.size()) throw CsvError("worker wrote a malformed row: " + line);
    ResultRow r = status_row(c, id, col(f, "status"));
    r.repetition = std::stoll(col(f, "repetition"));
    r.world_size = std::stoi(col(f, "world_size"));
    r.devices = col(f, "devices");
    r.precision = col(f, "precision");
    r.dataset_desc = col(f, "dataset");
    r.has_metrics = r.status == "ok";
    if (r.has_metrics) {
      r.samples_per_s = std::stod(col(f, "samples_per_s"));
      r.final_loss = std::stod(col(f, "final_loss"));
      const std::string& acc = col(f, "final_accuracy");
      r.final_accuracy = acc.empty() ? -1 : std::stod(acc);
    }
    rows.push_back(r);
  }
  return rows;
}

// Runs configuration `index` of the suite under `mpirun -np world_size` (the
// internal `suite-worker` command, run_suite_worker below); rank 0 writes its rows
// into a scratch folder, appended here to the suite's files. A job that dies
// (non-zero exit, no failed row of its own) adds one `failed:` row naming the launcher
// and the exit status or signal, for the repetition it died in.
RunOutcome run_multi_process(const std::string& suite_path, size_t index, const RunConfig& c, const RunIdentity& id,
                             const std::string& out_dir, ResultFiles& files, Progress& progress,
                             std::vector<std::string>* hosts) {
  RunOutcome o;
  const std::string dir = out_dir + "/.worker-" + std::to_string(index);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  int status = 0;
  // Rank 0 writes its progress line to this file; the suite redraws it while it waits.
  const std::string handover = dir + "/progress";
  ::setenv("TB_PROGRESS_FILE", handover.c_str(), 1);
  const auto redraw = [&] {
    std::ifstream in(handover);
    std::string line;
    if (std::getline(in, line)) progress.draw(line);
  };
  try {
    status = run_under_mpirun(c.world_size, {"suite-worker", suite_path, std::to_string(index), id.run_id,
                                             id.timestamp, dir},
                              out_dir + "/log.txt", redraw);
    ::unsetenv("TB_PROGRESS_FILE");
    progress.finish();
  } catch (const std::exception& e) {
    ::unsetenv("TB_PROGRESS_FILE");
    progress.finish();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);  // nothing of the job's to keep
    o.failure = std::string("failed: ") + e.what();
    o.failed = true;
    o.rows.push_back(status_row(c, id, o.failure));
    files.add(o.rows.back(), {});
    return o;
  }
  // The nodes the job ran on join env.json's "hosts". Rank 0 writes them once every rank
  // has joined: without them, the job never formed.
  bool formed = false;
  {
    std::ifstream in(dir + "/hosts.jsonl");
    formed = in.is_open();
    for (std::string h; std::getline(in, h);) {
      if (!h.empty() && std::find(hosts->begin(), hosts->end(), h) == hosts->end()) hosts->push_back(h);
    }
  }
  const std::vector<std::string> row_lines = read_data_lines(dir + "/results.csv");
  files.add_lines(row_lines, read_data_lines(dir + "/curves.csv"));
  o.rows = parse_rows(row_lines, c, id);
  std::filesystem::remove_all(dir);
  for (const ResultRow& r : o.rows) o.failed |= r.status.rfind("failed", 0) == 0;
  // A job that ended badly without a failed row of its own (a rank killed, the launcher
  // stopped, after some repetitions were written): the repetition it died in fails, so
  // the suite says so and exits 1. Not when the suite itself was interrupted (it ended
  // the job: the finished rows stand, exit 130/143), nor after every repetition's row (a
  // death while shutting down loses nothing). A skipped configuration's job exits 0.
  if (status != 0 && !o.failed && interrupt_signal() == 0 && static_cast<int64_t>(o.rows.size()) < c.reps) {
    // "mpirun -np N" or "srun -n N", as it was started.
    const std::vector<std::string> prefix = mpirun_prefix(c.world_size);
    const std::string launcher = std::filesystem::path(prefix[0]).filename().string() + " " + prefix[1];
    // 128 + N: the launcher, or the rank it passes on, ended by signal N (which, only log.txt tells).
    std::string why = formed ? "a rank died or was stopped"
                             : "the ranks never formed the job: the launcher, or MPI_Init in a rank, failed";
    if (status > 128 && status < 128 + NSIG) {
      // strsignal's words, not sigabbrev_np (glibc 2.32+: older clusters' compilers lack it).
      const char* name = ::strsignal(status - 128);
      why = "128 + " + std::to_string(status - 128) + (name ? std::string(": ") + name : std::string()) +
            ", a rank or the launcher ended by that signal" + (formed ? "" : " before the ranks formed the job");
    }
    o.failed = true;
    ResultRow r = status_row(c, id, "failed: " + launcher + " " + std::to_string(c.world_size) +
                                        " exited with status " + std::to_string(status) + " (" + why +
                                        "; see log.txt)");
    r.repetition = static_cast<int64_t>(o.rows.size());  // the rows written are repetitions 0..k-1
    o.rows.push_back(r);
    files.add(o.rows.back(), {});
  }
  return o;
}

// A backend whose ranks need a GPU each, launched by the suite on this node: too
// few GPUs for its ranks is a skip (as a missing GPU is), not a failure. "" when it
// can run, or when ranks may be spread over nodes by a custom launcher.
std::string gpus_short_for(const RunConfig& c) {
  if (!traits_of(c.backend).one_gpu_per_rank || !launch_is_single_node()) return "";
  const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
  if (!g.usable) return "";  // the backend's own availability says why
  return one_gpu_per_rank_shortfall(static_cast<int>(g.gpus.size()), c.world_size);
}

// One suite writes a folder at a time: an exclusive flock on DIR/.lock, which names
// the holder's pid. A second suite on the same folder is refused (exit 2) naming it.
class OutDirLock {
 public:
  explicit OutDirLock(const std::string& dir) {
    const std::string path = dir + "/.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw CsvError("--out: cannot create '" + path + "': " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      char pid[32] = {};
      const ssize_t n = ::pread(fd_, pid, sizeof pid - 1, 0);
      ::close(fd_);
      std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : "unknown";
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      throw UsageError("--out: '" + dir + "' is in use by another trainbench suite (pid " + holder +
                       "); wait for it to end or choose another folder");
    }
    const std::string me = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) < 0) {}  // the pid is informative only
  }
  ~OutDirLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock; the file stays (harmless, reused)
  }
  OutDirLock(const OutDirLock&) = delete;
  OutDirLock& operator=(const OutDirLock&) = delete;

 private:
  int fd_ = -1;
};

// Rows and curves of one configuration go to the suite's files as they are made; `rows`
// keeps what was written, which an interrupted configuration returns no outcome for.
struct SuiteSink final : RowSink {
  explicit SuiteSink(ResultFiles& f) : files(f) {}
  void add(const ResultRow& row, const std::vector<CurvePoint>& curve) override {
    files.add(row, curve);
    rows.push_back(row);
  }
  ResultFiles& files;
  std::vector<ResultRow> rows;
};

}  // namespace

int run_suite_worker(const std::vector<std::string>& a) {
  if (a.size() != 5) throw UsageError("suite-worker: internal command (FILE INDEX RUN_ID TIMESTAMP DIR)");
  const std::vector<RunConfig> configs = expand_suite(parse_suite(a[0]));
  const size_t index = std::stoul(a[1]);
  if (index >= configs.size()) throw UsageError("suite-worker: INDEX out of range");
  const RunConfig& c = configs[index];
  Job job = make_job(traits_of(c.backend).multi_process(), c.comm_timeout_s);
  RunIdentity id = make_run_identity();
  id.run_id = a[2];
  id.timestamp = a[3];
  // As `run` checks each rank (the suite checked this host; a launcher may place ranks elsewhere).
  if (const std::string why = host_memory_status(c, job); !why.empty()) {
    RunConfig asked = c;
    asked.world_size = job.size();
    if (job.root()) ResultFiles(a[4] + "/results.csv", a[4] + "/curves.csv").add(status_row(asked, id, why), {});
    return kExitRunFailed;
  }
  const Dataset data = load_rank_dataset(c, job.rank(), job.size());
  if (const std::string misfit = check_data_fits(c, data); !misfit.empty()) throw UsageError(misfit);
  // Every node's host record, for the suite's env.json (one JSON object per line).
  const std::vector<std::string> hosts = job.gather(host_record_json());
  std::unique_ptr<ResultFiles> files;
  if (job.root()) {
    files = std::make_unique<ResultFiles>(a[4] + "/results.csv", a[4] + "/curves.csv");
    std::string text;
    for (const std::string& h : hosts) text += h + "\n";
    write_file_atomically(a[4] + "/hosts.jsonl", text);
  }
  struct Nothing final : RowSink {
    void add(const ResultRow&, const std::vector<CurvePoint>&) override {}
  } nothing;
  Progress silent(false);
  if (job.root()) silent.set_handover(Progress::handover_file());  // the suite draws it
  SuiteSink to_files(*files);
  const RunOutcome o =
      run_configuration(c, data, job, id, silent, files ? static_cast<RowSink&>(to_files) : nothing);
  if (!o.failed) return kExitOk;
  if (o.local_failure && job.multi_rank()) job.abort(o.failure);
  return kExitRunFailed;
}

namespace {

// Everything a suite can refuse before it writes anything (exit 2): its file and
// entries, a launcher that cannot start, a suite itself started by a launcher, and
// every file dataset (read once, checked against its entry). Returns the configurations.
std::vector<RunConfig> checked_suite(const std::string& path) {
  const std::vector<SuiteEntry> entries = parse_suite(path);
  std::vector<RunConfig> configs = expand_suite(entries);
  // The suite starts each multi-process entry's ranks itself: started as N ranks, it
  // would run N suites, each starting every job again.
  if (const int ranks = launcher_world_size(); ranks > 1) {
    throw UsageError("suite: started as " + std::to_string(ranks) + " processes by mpirun/srun; run the suite "
                     "once, without a launcher: it starts each multi-process entry's ranks itself (TB_MPIRUN=srun "
                     "for Slurm)");
  }
  // A launcher that cannot start (TB_MPIRUN with words in it, or no such program) is bad
  // input, found before anything runs rather than as a failed row per multi-process entry.
  for (const RunConfig& c : configs) {
    const Backend* b = find_backend(c.backend);
    if (!b->traits().multi_process() || !b->unsupported(c).empty()) continue;
    if (const std::string why = launcher_problem(); !why.empty()) throw UsageError(why);
    break;
  }
  // File datasets are read once before anything is written: a missing or malformed
  // file, or one that does not fit its entry, is bad input (exit 2, nothing written).
  for (const SuiteEntry& e : entries) {
    const RunConfig& c = e.flags.config;
    if (c.data.kind != "csv" && c.data.kind != "idx") continue;
    const std::string where = e.file + ":" + std::to_string(e.line) + ": ";
    try {
      const Dataset d = load_dataset(c.data);
      if (const std::string misfit = check_data_fits(c, d); !misfit.empty()) throw UsageError(where + misfit);
    } catch (const DataError& err) {
      throw UsageError(where + "--dataset: " + err.what());
    }
  }
  return configs;
}

void refuse_used_folder(const std::string& out_dir) {
  if (std::filesystem::exists(out_dir + "/results.csv")) {
    throw UsageError("--out: '" + out_dir + "' already holds the results of another run; choose a new folder "
                     "(a run is one folder: its env.json describes every row)");
  }
}

}  // namespace

int list_suite(const std::string& path, const std::string& out_dir, bool no_ceilings) {
  const std::vector<RunConfig> configs = checked_suite(path);
  (void)ceilings_off_reason(no_ceilings, false);  // TB_CEILINGS=2 is bad input here too
  if (!out_dir.empty()) refuse_used_folder(out_dir);
  size_t runs = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    const RunConfig& c = configs[i];
    const std::string skip = find_backend(c.backend)->unsupported(c);
    runs += skip.empty();
    std::printf("[%zu/%zu] %s %s threads=%d world_size=%d reps=%lld: %s\n", i + 1, configs.size(), c.workload.c_str(),
                c.backend.c_str(), c.threads, c.world_size, static_cast<long long>(c.reps),
                skip.empty() ? "runs" : ("skipped: " + skip).c_str());
  }
  std::printf("%zu configurations: %zu run, %zu skipped; nothing was run or written (--dry-run)\n", configs.size(),
              runs, configs.size() - runs);
  return kExitOk;
}

int run_suite(const std::string& path, std::string out_dir, const std::string& command_line, bool no_ceilings) {
  const std::vector<RunConfig> configs = checked_suite(path);
  const std::string ceilings_off = ceilings_off_reason(no_ceilings, false);  // TB_CEILINGS=2: exit 2 now
  const RunIdentity id = make_run_identity();
  if (out_dir.empty()) out_dir = "results/" + id.run_id;
  std::error_code ec;
  const bool made_dir = std::filesystem::create_directories(out_dir, ec);
  if (ec || !std::filesystem::is_directory(out_dir)) {
    throw CsvError("--out: cannot create directory '" + out_dir + "': " + ec.message());
  }
  const OutDirLock lock(out_dir);  // one suite per folder; held until the suite returns
  refuse_used_folder(out_dir);
  std::unique_ptr<ResultFiles> made;
  std::vector<std::string> hosts = {host_record_json()};  // + the nodes of multi-process jobs
  std::string ceilings;
  std::FILE* log = nullptr;
  bool wrote_env = false;
  try {
    made = std::make_unique<ResultFiles>(out_dir + "/results.csv", out_dir + "/curves.csv");
    // The machine's ceilings (harness/ceilings.h), measured once before any configuration runs.
    ceilings = ceilings_json(ceilings_off, id.host);
    write_file_atomically(out_dir + "/env.json", env_json(id, command_line, configs.front().seed, hosts, ceilings));
    wrote_env = true;
    log = std::fopen((out_dir + "/log.txt").c_str(), "a");
    if (!log) throw CsvError("--out: cannot write '" + out_dir + "/log.txt': " + std::strerror(errno));
  } catch (...) {
    // A suite that could not start (a full disk) leaves no half-made run: the folder it
    // made goes; in a folder that was there, the files it wrote.
    if (made) made->discard_if_new();
    if (made_dir) {
      std::filesystem::remove_all(out_dir, ec);
    } else if (wrote_env) {
      std::filesystem::remove(out_dir + "/env.json", ec);
    }
    throw;
  }
  ResultFiles& files = *made;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log_guard(log, &std::fclose);
  // log.txt is for people; a failed write there (a full disk) is said once, and the
  // suite goes on: results.csv has its own guarantees.
  bool log_warned = false;
  const auto flush_log = [&] {
    if (std::fflush(log) == 0 && !std::ferror(log)) return;
    if (!log_warned) {
      std::fprintf(stderr, "trainbench: %s/log.txt: write failed (%s): the log is incomplete\n", out_dir.c_str(),
                   std::strerror(errno));
    }
    log_warned = true;
  };

  // log.txt lists every row results.csv got, as it got them; a row that did not run
  // gives its status (it has no samples/s or loss).
  const auto log_rows = [&](const RunConfig& c, const std::vector<ResultRow>& rows) {
    for (const ResultRow& r : rows) {
      std::fprintf(log, "  rep %lld: %s", static_cast<long long>(r.repetition), r.status.c_str());
      if (r.has_metrics) std::fprintf(log, " samples/s=%.4g final_loss=%.6g", r.samples_per_s, r.final_loss);
      std::fprintf(log, "\n");
      if (r.status.rfind("failed", 0) == 0) {
        std::fprintf(stderr, "trainbench: %s %s: %s\n", c.workload.c_str(), c.backend.c_str(), r.status.c_str());
      }
    }
  };

  Progress progress(Progress::auto_enabled());
  Stopwatch suite_clock;
  Job job;  // the suite process itself is rank 0 of 1; multi-process entries run in their own job
  SuiteSink sink(files);
  std::vector<ResultRow> all;
  bool any_failed = false;
  // Consecutive configurations of one entry share a dataset: load it once.
  std::string cached_key;
  std::unique_ptr<Dataset> data;
  std::string data_error;
  int stopped_by = 0;  // SIGINT/SIGTERM: stop after keeping what is written
  for (size_t i = 0; i < configs.size() && !stopped_by; ++i) {
    const RunConfig& c = configs[i];
    const std::string key = c.data.kind + "|" + c.data.path + "|" + c.data.labels_path + "|" + c.data.target + "|" +
                            std::to_string(c.data.n) + "|" + std::to_string(c.data.d) + "|" +
                            std::to_string(c.data.o) + "|" + std::to_string(c.data.seed) + "|" +
                            std::to_string(c.data.noise);
    std::fprintf(log, "[%zu/%zu] %s %s threads=%d\n", i + 1, configs.size(), c.workload.c_str(), c.backend.c_str(),
                 c.threads);
    flush_log();  // before a launcher's own lines, which it writes into log.txt itself
    // "[k/N]" before every progress line, and the rest of the suite at the mean pace so far.
    const double per_config = i > 0 ? suite_clock.seconds() / static_cast<double>(i) : -1;
    progress.set_context("[" + std::to_string(i + 1) + "/" + std::to_string(configs.size()) + "] ",
                         per_config < 0 ? -1 : per_config * static_cast<double>(configs.size() - i - 1));
    const Backend* backend = find_backend(c.backend);
    const bool multi = backend->traits().multi_process();
    RunOutcome o;
    const auto status_only = [&](const std::string& status) {
      o.rows.push_back(status_row(c, id, status));
      o.failed = status.rfind("failed", 0) == 0;
      files.add(o.rows.back(), {});
    };
    // Decided before any data is made: what the backend cannot take, then whether the
    // configuration fits in this host's memory as `run` checks it (harness/host_memory.h),
    // for every rank the suite starts here or for this process.
    std::string skip = backend->unsupported(c);
    if (skip.empty()) skip = gpus_short_for(c);
    std::string short_of;
    if (skip.empty()) {
      if (multi) {  // the ranks make their own data: this process's copy goes first
        data.reset();
        cached_key.clear();
      }
      const int world = multi ? c.world_size : 1, here = multi && launch_is_single_node() ? c.world_size : 1;
      short_of = host_memory_shortfall(c, world, here);
      if (!short_of.empty() && data) {  // the dataset an earlier configuration left here is memory too
        data.reset();
        cached_key.clear();
        short_of = host_memory_shortfall(c, world, here);
      }
    }
    if (skip.empty() && short_of.empty() && !multi && key != cached_key) {
      cached_key = key;
      data.reset();
      data_error.clear();
      try {
        data = std::make_unique<Dataset>(load_dataset(c.data));
      } catch (const std::exception& e) {
        data_error = e.what();
      }
    }
    if (!skip.empty()) {
      status_only("skipped: " + skip);
    } else if (!short_of.empty()) {
      status_only("failed: " + short_of);
    } else if (multi) {
      // Each rank loads and checks its data (the suite checked file datasets before it began).
      const size_t known = hosts.size();
      o = run_multi_process(path, i, c, id, out_dir, files, progress, &hosts);
      if (hosts.size() != known) {
        write_file_atomically(out_dir + "/env.json", env_json(id, command_line, configs.front().seed, hosts, ceilings));
      }
    } else if (!data) {
      status_only("failed: " + data_error);
    } else if (const std::string misfit = check_data_fits(c, *data); !misfit.empty()) {
      status_only("failed: " + misfit);
    } else {
      sink.rows.clear();
      try {
        o = run_configuration(c, *data, job, id, progress, sink);
      } catch (const Interrupted& e) {
        stopped_by = e.signal();
        o.rows = sink.rows;  // the repetitions that finished before the signal are in results.csv
      } catch (const OutputError&) {
        log_rows(c, sink.rows);  // results.csv keeps them: so does the log, as far as it can
        flush_log();
        throw;
      }
    }
    log_rows(c, o.rows);
    if (!stopped_by) stopped_by = interrupt_signal();
    if (stopped_by) {
      std::fprintf(log, "interrupted by %s during configuration %zu of %zu (%s %s): the rows of finished "
                   "repetitions are kept; the rest did not run\n",
                   signal_name(stopped_by).c_str(), i + 1, configs.size(), c.workload.c_str(), c.backend.c_str());
      std::fprintf(stderr, "trainbench: interrupted by %s during configuration %zu of %zu; rows written so far "
                   "are kept in %s/results.csv\n",
                   signal_name(stopped_by).c_str(), i + 1, configs.size(), out_dir.c_str());
    }
    flush_log();
    any_failed |= o.failed;
    all.insert(all.end(), o.rows.begin(), o.rows.end());
  }
  print_summary(all, stdout);
  print_summary(all, log);
  // Timings taken while something else used the CPUs are flagged, not hidden. Of the rows
  // that were judged: one too short to judge (empty cells) is counted apart.
  size_t timed = 0, judged = 0, disturbed = 0;
  for (const ResultRow& r : all) {
    timed += r.has_metrics;
    judged += r.has_metrics && r.others_cpu_share >= 0;
    disturbed += r.has_metrics && r.disturbed();
  }
  const size_t unjudged = timed - judged;
  if (disturbed > 0) {
    const std::string warn = "warning: " + std::to_string(disturbed) + " of " + std::to_string(judged) +
                             " timed rows judged were disturbed (other processes or the hypervisor took more than "
                             "5% of the CPU time; results.csv column `disturbed`" +
                             (unjudged > 0 ? "; " + std::to_string(unjudged) + " more not judged, too short or "
                                             "without /proc/stat" : std::string()) +
                             "): re-run them on a quiet machine\n";
    std::fprintf(stderr, "trainbench: %s", warn.c_str());
    std::fprintf(log, "%s", warn.c_str());
  }
  flush_log();
  std::printf("\nresults: %s/results.csv (env.json, curves.csv, log.txt beside it)\n", out_dir.c_str());
  if (stopped_by) return 128 + stopped_by;
  return any_failed ? kExitRunFailed : kExitOk;
}

}  // namespace tb
