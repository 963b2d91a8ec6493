// bench/micro/bench_allreduce.cpp — all-reduce bandwidth sweep over tb::Communicator (MPI,
// CPU buffers), printed the way NVIDIA/nccl-tests prints all_reduce_perf. Plain main(), run
// under mpirun. The sweep, its flags, check and table: allreduce_sweep.h (shared with the
// NCCL sweep, bench_allreduce_nccl.cpp); here only how one all-reduce is done and timed:
// tb::Communicator's allreduce_sum (or iallreduce_sum + wait with --mode nonblocking),
// timed with the steady clock after a barrier.
#include <mpi.h>  // MPI_Get_library_version only (provenance); collectives go through Communicator

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/micro/allreduce_sweep.h"
#include "harness/comm/mpi_session.h"

namespace {

using tb::bench::Mode;

constexpr tb::bench::SweepProgram kProgram = {"tb_bench_allreduce", /*has_mode=*/true};

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<size_t>(std::max(len, 0)));
  const size_t cut = s.find_first_of(",\n");
  return cut == std::string::npos ? s : s.substr(0, cut);
}

class MpiTarget final : public tb::bench::SweepTarget {
 public:
  MpiTarget(tb::Communicator& comm, Mode mode, int64_t max_count)
      : comm_(comm), mode_(mode), buf_(static_cast<size_t>(max_count)) {}

  std::string title() const override {
    return "over tb::Communicator '" + comm_.name() + "', " +
           (mode_ == Mode::blocking ? "blocking (allreduce_sum)" : "nonblocking (iallreduce_sum + wait)");
  }
  std::string library() const override { return mpi_library_version(); }
  std::string time_definition() const override { return "steady-clock time of `iters` calls after a barrier"; }
  std::string backend() const override { return "mpi"; }

  int64_t checked_allreduce(int64_t count) override {
    tb::bench::fill_pattern(buf_.data(), count, comm_.rank());
    once(count);
    return tb::bench::count_wrong(buf_.data(), count, comm_.size());
  }

  double timed_allreduce(int64_t count, int64_t warmup, int64_t iters) override {
    for (int64_t w = 0; w < warmup; ++w) once(count);
    comm_.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t it = 0; it < iters; ++it) once(count);
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(t1 - t0).count() / static_cast<double>(iters);
  }

 private:
  void once(int64_t count) {
    if (mode_ == Mode::blocking) {
      comm_.allreduce_sum(buf_.data(), count);
    } else {
      comm_.wait(comm_.iallreduce_sum(buf_.data(), count));
    }
  }

  tb::Communicator& comm_;
  Mode mode_;
  std::vector<float> buf_;
};

int mpi_sweep(tb::Communicator& comm, const tb::bench::SweepOptions& opts, const std::string& command_line) {
  MpiTarget target(comm, opts.mode, tb::bench::sweep_counts(opts).back());
  return tb::bench::run_sweep(comm, target, opts, kProgram.name, command_line);
}

}  // namespace

int main(int argc, char** argv) { return tb::bench::sweep_main(argc, argv, kProgram, mpi_sweep); }
