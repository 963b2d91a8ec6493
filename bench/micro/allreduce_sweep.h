// bench/micro/allreduce_sweep.h — the all-reduce bandwidth sweep shared by
// tb_bench_allreduce (MPI, CPU buffers) and tb_bench_allreduce_nccl (NCCL, one GPU per
// rank): flags, the size sweep, the check pattern, and the nccl-tests-style table.
// A program supplies only how one all-reduce is checked and timed (SweepTarget).
// Every rank runs the same sweep; rank 0 prints. Per size S bytes (count S/4 floats,
// in place): one checked all-reduce, `warmup` untimed ones, then `iters` timed after a
// barrier; time = max over ranks of the mean per call. n = world size.
//   algbw = S / time                busbw = algbw * 2(n-1)/n   (GB/s = 1e9 B/s)
// #wrong counts elements (summed over ranks) that differ from the exact expected sum;
// any wrong element makes the exit code 1. Bad flags: one line on stderr, exit 2.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/comm/communicator.h"

namespace tb::bench {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Mode { blocking, nonblocking };

struct SweepOptions {
  int64_t min_bytes = 4;
  int64_t max_bytes = int64_t{256} << 20;
  int64_t step_factor = 2;
  int64_t iters = 20;
  int64_t warmup = 5;
  Mode mode = Mode::blocking;  // MPI only (--mode)
  bool check = true;
  bool smoke = false;
  double deadline_s = 120.0;  // watchdog: one MPI collective longer than this aborts the job
  std::string csv;            // --csv FILE: rank 0 also writes the table there
};

// What differs between the programs sharing the flags.
struct SweepProgram {
  const char* name;      // "tb_bench_allreduce": usage line and error prefix
  bool has_mode;         // accepts --mode blocking|nonblocking
};

// The largest in-place buffer one MPI call takes, 2^31 - 1 floats: also the sweep's cap
// for NCCL, so both programs accept the same sizes.
constexpr int64_t kMaxSweepBytes = int64_t{INT32_MAX} * int64_t{sizeof(float)};

// Accepts "--flag value" and "--flag=value". Returns false for --help. Throws
// UsageError (one line naming the flag and what it allows).
bool parse_sweep_args(int argc, char** argv, const SweepProgram& p, SweepOptions* o);
std::string sweep_usage(const SweepProgram& p);

// Parses argv before MPI starts: every rank gets the same argv, so all exit together.
// Returns -1 to go on, else the exit code (0 after --help, 2 after a bad flag; only
// rank 0, as the launcher numbers it, prints).
int parse_or_exit_code(int argc, char** argv, const SweepProgram& p, SweepOptions* o);
bool launcher_rank_is_zero();
std::string joined_command_line(int argc, char** argv);

// Element counts of the sweep: min, min*f, min*f^2, ... <= max, each rounded down to
// whole floats (as nccl-tests does). A pure function of the options, so all ranks agree.
std::vector<int64_t> sweep_counts(const SweepOptions& o);

// Check pattern: small integers, exact in float and in every sum below 2^24.
// x(r, i) = hash(i) % 8 + r % 7 + 1, in [1, 15]: every rank adds >= 1 everywhere (a
// missing rank is always seen) and the hash makes shifted or swapped chunks show.
void fill_pattern(float* x, int64_t count, int rank);
// Elements of x that differ from the sum over ranks r < n of x(r, i).
int64_t count_wrong(const float* x, int64_t count, int n);

// How one program all-reduces: float sum, in place, on buffers of at least the
// sweep's largest count. Every method is collective.
class SweepTarget {
 public:
  virtual ~SweepTarget() = default;
  // "over tb::Communicator 'mpi', blocking (allreduce_sum)"
  virtual std::string title() const = 0;
  // "Open MPI v4.1.4", "NCCL 2.28.9 ...": the library measured.
  virtual std::string library() const = 0;
  // Appended to this rank's "#  Rank r Pid p on host (local rank l)" line.
  virtual std::string rank_detail() const { return ""; }
  // How one rank's time is taken: "steady-clock time of `iters` calls after a barrier".
  virtual std::string time_definition() const = 0;
  virtual std::string backend() const = 0;  // "mpi", "nccl": the CSV's first column
  // Fills this rank's buffer with fill_pattern, all-reduces `count` floats once and
  // returns count_wrong of the result on this rank.
  virtual int64_t checked_allreduce(int64_t count) = 0;
  // `warmup` untimed all-reduces of `count` floats, a barrier, then `iters` timed:
  // this rank's seconds per call.
  virtual double timed_allreduce(int64_t count, int64_t warmup, int64_t iters) = 0;
};

// The sweep: header, ranks, one table row per size, summary; returns the exit code
// (0, or 1 when any element was wrong). Throws on communication or file errors.
int run_sweep(Communicator& comm, SweepTarget& target, const SweepOptions& o, const std::string& program,
              const std::string& command_line);

// A sweep program's main(): flags (checked before MPI starts, so every rank exits 2
// together), the MPI world, `body` (which runs the sweep and returns the exit code),
// and MPI's end. An exception aborts the whole job (a peer may be waiting in a
// collective this rank will never join) and exits 1.
using SweepBody = std::function<int(Communicator& comm, const SweepOptions& o, const std::string& command_line)>;
int sweep_main(int argc, char** argv, const SweepProgram& p, const SweepBody& body);

}  // namespace tb::bench
