// harness/fault_plan.cpp — see fault_plan.h.
#include "harness/fault_plan.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace tb {

Fault fault_from_env() {
  Fault f;
  const char* env = std::getenv("TB_FAULT");
  if (!env || !*env) return f;
  std::istringstream in(env);
  for (std::string kv; std::getline(in, kv, ',');) {
    const auto eq = kv.find('=');
    const std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (k == "rank") f.rank = std::atoi(v.c_str());
    else if (k == "step") f.step = std::atoll(v.c_str());
    else if (k == "kind") f.kind = v;
  }
  // Step 0 is before the rank joins the job (MPI_Init): only a rank that dies or hangs.
  const bool dies = f.kind == "exit" || f.kind == "kill" || f.kind == "hang";
  if (f.rank < 0 || f.step < 0 || (f.step == 0 && !dies) ||
      (!dies && f.kind != "throw" && f.kind != "nan" && f.kind != "setup")) {
    throw std::invalid_argument(std::string("TB_FAULT: expected rank=R,step=S,kind=throw|exit|kill|hang|nan|setup, "
                                            "S >= 1 (0: before joining the job, exit|kill|hang only) (got '") +
                                env + "')");
  }
  return f;
}

void Fault::before_join(int on_rank) const {
  if (armed() && step == 0 && on_rank == rank) inject_fault(kind, on_rank, 0);
}

void Fault::at_setup(int on_rank) const {
  if (armed() && kind == "setup" && on_rank == rank) inject_fault(kind, on_rank, 0);
}

void Fault::before_step(int on_rank, int64_t at_step) const {
  if (!armed() || kind == "nan" || kind == "setup" || on_rank != rank || at_step != step) return;
  inject_fault(kind, on_rank, at_step);
}

bool Fault::nan_at(int on_rank, int64_t at_step) const {
  if (!armed() || kind != "nan" || on_rank != rank || at_step < step) return false;
  if (!announced) announce_fault(kind, on_rank, at_step);
  announced = true;
  return true;
}

void announce_fault(const std::string& kind, int rank, int64_t step) {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);  // wall clock: comparable with the test's, across processes
  std::fprintf(stderr, "trainbench: fault injected at %lld.%06ld (kind %s on rank %d at step %lld)\n",
               static_cast<long long>(now.tv_sec), now.tv_nsec / 1000, kind.c_str(), rank,
               static_cast<long long>(step));
  std::fflush(stderr);
}

void inject_fault(const std::string& kind, int rank, int64_t step) {
  announce_fault(kind, rank, step);
  if (kind == "setup") throw std::runtime_error("injected fault: rank " + std::to_string(rank) + " failed to set up");
  const std::string where =
      "injected fault '" + kind + "' on rank " + std::to_string(rank) + " at step " + std::to_string(step);
  std::fprintf(stderr, "trainbench: %s\n", where.c_str());
  std::fflush(stderr);
  // A process that dies: no atexit handlers (nor, in a forked cpu-hogwild worker, its
  // parent's), no MPI_Finalize.
  if (kind == "exit") std::_Exit(3);
  if (kind == "kill") ::raise(SIGKILL);
  if (kind == "hang") {
    for (;;) ::pause();
  }
  throw std::runtime_error(where);
}

}  // namespace tb
