// bench/micro/allreduce_sweep.cpp — see allreduce_sweep.h.
#include "bench/micro/allreduce_sweep.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>

#include "harness/comm/mpi_session.h"

namespace tb::bench {
namespace {

// The number text starts with (std::stoll / std::stod), and in *used how many characters
// it took; nullopt when it does not start with one (or it is out of range).
template <class T>
std::optional<T> leading_number(const std::string& text, size_t* used) {
  try {
    if constexpr (std::is_floating_point_v<T>) return std::stod(text, used);
    else return std::stoll(text, used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// "4", "64K", "256M", "1G" -> bytes. Throws UsageError naming the flag.
int64_t parse_bytes(const std::string& flag, const std::string& text) {
  const std::string allowed = flag + ": expected a byte count such as 4, 64K, 256M or 1G, got '" + text + "'";
  if (text.empty() || text[0] < '0' || text[0] > '9') throw UsageError(allowed);
  size_t used = 0;
  const std::optional<int64_t> parsed = leading_number<int64_t>(text, &used);
  if (!parsed) throw UsageError(allowed);
  const int64_t v = *parsed;
  int shift = 0;
  if (used + 1 == text.size()) {
    switch (text[used]) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      default: throw UsageError(allowed);
    }
  } else if (used != text.size()) {
    throw UsageError(allowed);
  }
  if (v > (kMaxSweepBytes >> shift))
    throw UsageError(flag + ": at most " + std::to_string(kMaxSweepBytes) +
                     " bytes (8G - 4: 2^31-1 floats per MPI call), got '" + text + "'");
  return v << shift;
}

int64_t parse_int(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
  const std::string allowed =
      flag + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + text + "'";
  size_t used = 0;
  const std::optional<int64_t> v = leading_number<int64_t>(text, &used);
  if (!v || used != text.size() || *v < lo || *v > hi) throw UsageError(allowed);
  return *v;
}

double parse_seconds(const std::string& flag, const std::string& text) {
  const std::string allowed = flag + ": expected seconds >= 0 (0 disables the watchdog), got '" + text + "'";
  size_t used = 0;
  const std::optional<double> v = leading_number<double>(text, &used);
  if (!v || used != text.size() || !(*v >= 0)) throw UsageError(allowed);
  return *v;
}

uint32_t index_hash(int64_t i) { return (static_cast<uint32_t>(i) * 2654435761u) >> 29; }  // 0..7

// Every rank must run the same sweep (MPMD launches could pass different flags):
// compare each option with its max and min over ranks.
void check_ranks_agree(Communicator& comm, const SweepOptions& o) {
  const std::vector<double> mine = {double(o.min_bytes), double(o.max_bytes), double(o.step_factor),
                                    double(o.iters),     double(o.warmup),    double(o.mode == Mode::nonblocking),
                                    double(o.check)};
  std::vector<double> both(mine);
  for (double v : mine) both.push_back(-v);
  comm.allreduce_max(both.data(), static_cast<int64_t>(both.size()));
  for (size_t k = 0; k < mine.size(); ++k) {
    if (both[k] != mine[k] || -both[k + mine.size()] != mine[k])
      throw std::runtime_error("ranks were started with different flags (the sweep must be the same on every rank)");
  }
}

// "#  Rank r Pid p on host (local rank l)<detail>" for every rank, printed by rank 0:
// each rank in turn broadcasts its fixed-size line.
void print_ranks(Communicator& comm, const SweepTarget& target) {
  char host[128] = {};
  gethostname(host, sizeof host - 1);
  const std::string detail = target.rank_detail();
  for (int r = 0; r < comm.size(); ++r) {
    char line[384] = {};
    if (comm.rank() == r)
      std::snprintf(line, sizeof line, "#  Rank %2d Pid %6d on %s (local rank %d)%s", r, static_cast<int>(getpid()),
                    host, comm.local_rank(), detail.c_str());
    comm.broadcast(line, sizeof line, r);
    if (comm.rank() == 0) std::printf("%s\n", line);
  }
}

// nccl-tests' time format: fewer decimals as the number grows.
std::string format_us(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us >= 10000.0 ? "%9.0f" : us >= 100.0 ? "%9.1f" : "%9.2f", us);
  return buf;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

std::string sweep_usage(const SweepProgram& p) {
  std::string s = std::string("usage: mpirun -np N ") + p.name +
                  " [--min-bytes 4] [--max-bytes 256M] [--step-factor 2]\n"
                  "         [--iters 20] [--warmup 5]";
  if (p.has_mode) s += " [--mode blocking|nonblocking]";
  s += " [--check|--no-check]\n"
       "         [--deadline-s 120] [--csv FILE] [--smoke]\n"
       "sizes take K, M, G suffixes (powers of 1024); --smoke caps --max-bytes at 64K and --iters at 2;\n"
       "--csv also writes the table (rank 0) as backend,world_size,bytes,count,time_us,algbw_gbps,busbw_gbps,wrong\n";
  return s;
}

bool parse_sweep_args(int argc, char** argv, const SweepProgram& p, SweepOptions* o) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    bool inline_value = false;
    if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      inline_value = true;
    }
    auto next = [&]() -> std::string {
      if (inline_value) return value;
      if (i + 1 >= args.size()) throw UsageError(flag + ": missing value");
      return args[++i];
    };
    if (flag == "--help" || flag == "-h") return false;
    if (flag == "--min-bytes") {
      o->min_bytes = parse_bytes(flag, next());
    } else if (flag == "--max-bytes") {
      o->max_bytes = parse_bytes(flag, next());
    } else if (flag == "--step-factor") {
      o->step_factor = parse_int(flag, next(), 2, 1024);
    } else if (flag == "--iters") {
      o->iters = parse_int(flag, next(), 1, 1000000);
    } else if (flag == "--warmup") {
      o->warmup = parse_int(flag, next(), 0, 1000000);
    } else if (flag == "--mode" && p.has_mode) {
      const std::string m = next();
      if (m == "blocking") o->mode = Mode::blocking;
      else if (m == "nonblocking") o->mode = Mode::nonblocking;
      else throw UsageError("--mode: expected blocking or nonblocking, got '" + m + "'");
    } else if (flag == "--check" || flag == "--no-check") {
      o->check = flag == "--check";
      if (inline_value) {
        if (flag == "--check" && (value == "on" || value == "1")) o->check = true;
        else if (flag == "--check" && (value == "off" || value == "0")) o->check = false;
        else throw UsageError(flag + ": expected --check, --no-check or --check=on|off, got '" + args[i] + "'");
      }
    } else if (flag == "--deadline-s") {
      o->deadline_s = parse_seconds(flag, next());
    } else if (flag == "--csv") {
      o->csv = next();
      if (o->csv.empty()) throw UsageError("--csv: expected a file name, got ''");
    } else if (flag == "--smoke" && !inline_value) {
      o->smoke = true;
    } else {
      const bool mpi_only = flag == "--mode";  // the NCCL sweep has one mode: calls on a stream
      throw UsageError("unknown flag '" + args[i] + "' (" + (mpi_only ? "tb_bench_allreduce's only; " : "") +
                       "allowed: --min-bytes, --max-bytes, --step-factor, --iters, " +
                       "--warmup, " + (p.has_mode ? "--mode, " : "") +
                       "--check, --no-check, --deadline-s, --csv, --smoke, --help)");
    }
  }
  if (o->smoke) {
    o->max_bytes = std::min<int64_t>(o->max_bytes, 64 << 10);
    o->iters = std::min<int64_t>(o->iters, 2);
  }
  if (o->min_bytes < 4) throw UsageError("--min-bytes: at least 4 (one float), got " + std::to_string(o->min_bytes));
  if (o->max_bytes < o->min_bytes)
    throw UsageError("--max-bytes: must be >= --min-bytes (" + std::to_string(o->min_bytes) + "), got " +
                     std::to_string(o->max_bytes) + (o->smoke ? " (after --smoke's 64K cap)" : ""));
  return true;
}

bool launcher_rank_is_zero() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (const char* s = std::getenv(v)) return std::strcmp(s, "0") == 0;
  }
  return true;
}

int parse_or_exit_code(int argc, char** argv, const SweepProgram& p, SweepOptions* o) {
  try {
    if (!parse_sweep_args(argc, argv, p, o)) {
      if (launcher_rank_is_zero()) std::fputs(sweep_usage(p).c_str(), stdout);
      return 0;
    }
  } catch (const UsageError& e) {
    if (launcher_rank_is_zero()) std::fprintf(stderr, "%s: %s\n", p.name, e.what());
    return 2;
  }
  return -1;
}

std::string joined_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) s += ' ';
    s += argv[i];
  }
  return s;
}

std::vector<int64_t> sweep_counts(const SweepOptions& o) {
  std::vector<int64_t> counts;
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes;) {
    counts.push_back(bytes / int64_t{sizeof(float)});
    if (bytes > o.max_bytes / o.step_factor) break;  // next step past max (or overflow)
    bytes *= o.step_factor;
  }
  return counts;
}

void fill_pattern(float* x, int64_t count, int rank) {
  const uint32_t r = static_cast<uint32_t>(rank % 7) + 1;
  for (int64_t i = 0; i < count; ++i) x[i] = static_cast<float>(index_hash(i) + r);
}

// n * hash(i) + sum_r (r % 7 + 1), computed in integers.
int64_t count_wrong(const float* x, int64_t count, int n) {
  int64_t rank_part = 0;
  for (int r = 0; r < n; ++r) rank_part += r % 7 + 1;
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double expected = static_cast<double>(int64_t{n} * index_hash(i) + rank_part);
    wrong += static_cast<double>(x[i]) != expected;
  }
  return wrong;
}

int run_sweep(Communicator& comm, SweepTarget& target, const SweepOptions& o, const std::string& program,
              const std::string& command_line) {
  const int n = comm.size();
  const bool root = comm.rank() == 0;
  check_ranks_agree(comm, o);
  const std::vector<int64_t> counts = sweep_counts(o);

  // The CSV is opened by rank 0 before any measurement; every rank learns whether it could.
  std::unique_ptr<std::FILE, FileCloser> csv;
  std::string csv_error;
  if (root && !o.csv.empty()) {
    csv.reset(std::fopen(o.csv.c_str(), "w"));
    if (!csv) csv_error = "--csv: cannot write '" + o.csv + "': " + std::strerror(errno);
  }
  if (!all_ranks_ok(comm, csv_error.empty()))
    throw std::runtime_error(csv_error.empty() ? "rank 0 cannot write the --csv file" : csv_error);
  if (csv) {
    std::fprintf(csv.get(), "backend,world_size,bytes,count,time_us,algbw_gbps,busbw_gbps,wrong\n");
    std::fflush(csv.get());
  }

  if (root) {
    std::printf("# %s: all-reduce (sum, in place, float) %s\n", program.c_str(), target.title().c_str());
    std::printf("# %s\n", target.library().c_str());
    std::printf("# command: %s\n", command_line.c_str());
    std::printf("# world size %d  minBytes %lld  maxBytes %lld  step: %lld(factor)  warmup iters: %lld  iters: %lld  "
                "validation: %d%s\n",
                n, static_cast<long long>(o.min_bytes), static_cast<long long>(o.max_bytes),
                static_cast<long long>(o.step_factor), static_cast<long long>(o.warmup),
                static_cast<long long>(o.iters), o.check ? 1 : 0, o.smoke ? "  (smoke)" : "");
    std::printf("#\n# Using ranks\n");
  }
  print_ranks(comm, target);
  if (root) {
    std::printf("#\n");
    std::printf("# time   = max over ranks of (%s) / iters\n", target.time_definition().c_str());
    std::printf("# algbw  = size / time                       (GB/s, 1 GB = 1e9 B)\n");
    std::printf("# busbw  = algbw * 2(n-1)/n, n = %d          (bytes each rank sends and receives in a ring)\n", n);
    std::printf("# #wrong = elements, summed over ranks, that differ from the exact sum (small integers)\n");
    std::printf("#\n");
    std::printf("# %10s  %12s  %8s  %6s  %9s  %7s  %7s  %7s\n", "size", "count", "type", "redop", "time", "algbw",
                "busbw", "#wrong");
    std::printf("# %10s  %12s  %8s  %6s  %9s  %7s  %7s  %7s\n", "(B)", "(elements)", "", "", "(us)", "(GB/s)",
                "(GB/s)", "");
    std::fflush(stdout);
  }

  int64_t total_wrong = 0;
  double busbw_sum = 0.0;
  for (const int64_t count : counts) {
    const int64_t bytes = count * int64_t{sizeof(float)};

    // Correctness: one all-reduce of the pattern, checked on every rank (untimed).
    double wrong = 0.0;
    if (o.check) {
      wrong = static_cast<double>(target.checked_allreduce(count));
      comm.allreduce_sum(&wrong, 1);
    }

    // Timing. The buffer keeps being summed in place (values grow by n per call, as in
    // nccl-tests' in-place runs); the speed of a float sum does not depend on them.
    double sec = target.timed_allreduce(count, o.warmup, o.iters);
    comm.allreduce_max(&sec, 1);

    const double algbw = static_cast<double>(bytes) / sec / 1e9;
    const double busbw = algbw * 2.0 * (n - 1) / n;
    busbw_sum += busbw;
    total_wrong += static_cast<int64_t>(wrong);
    if (root) {
      const std::string wrong_text = o.check ? std::to_string(static_cast<int64_t>(wrong)) : "N/A";
      std::printf("  %10lld  %12lld  %8s  %6s  %s  %7.2f  %7.2f  %7s\n", static_cast<long long>(bytes),
                  static_cast<long long>(count), "float", "sum", format_us(sec * 1e6).c_str(), algbw, busbw,
                  wrong_text.c_str());
      std::fflush(stdout);
      if (csv) {
        std::fprintf(csv.get(), "%s,%d,%lld,%lld,%.9g,%.9g,%.9g,%s\n", target.backend().c_str(), n,
                     static_cast<long long>(bytes), static_cast<long long>(count), sec * 1e6, algbw, busbw,
                     o.check ? wrong_text.c_str() : "");
        std::fflush(csv.get());
      }
    }
  }

  if (root) {
    if (o.check)
      std::printf("# Wrong elements       : %lld %s\n", static_cast<long long>(total_wrong),
                  total_wrong == 0 ? "OK" : "FAILED");
    else
      std::printf("# Wrong elements       : not checked (--no-check)\n");
    std::printf("# Avg bus bandwidth    : %.4f GB/s\n#\n", busbw_sum / static_cast<double>(counts.size()));
    std::fflush(stdout);
    if (csv && std::ferror(csv.get())) throw std::runtime_error("--csv: write error on '" + o.csv + "'");
  }
  return total_wrong == 0 ? 0 : 1;
}

int sweep_main(int argc, char** argv, const SweepProgram& p, const SweepBody& body) {
  SweepOptions opts;
  if (const int rc = parse_or_exit_code(argc, argv, p, &opts); rc >= 0) return rc;
  const std::string command_line = joined_command_line(argc, argv);
  int rc = 0;
  {
    std::shared_ptr<Communicator> comm;
    try {
      comm = mpi_world(opts.deadline_s);
      rc = body(*comm, opts, command_line);
    } catch (const std::exception& e) {
      if (comm) comm->abort(1, std::string(p.name) + ": " + e.what());
      std::fprintf(stderr, "%s: %s\n", p.name, e.what());
      return 1;
    }
  }  // release the communicator (stops its watchdog) before MPI_Finalize
  mpi_finalize_if_initialised();
  return rc;
}

}  // namespace tb::bench
