// harness/fault_plan.cpp — see fault_plan.h.
#include "harness/fault_plan.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tb {

namespace {

// A whole non-negative number, the full text (atoi read "x" as 0 and "3abc" as 3: a
// fault on another rank or step than the one asked for), within T's range.
template <class T>
bool whole_number(const std::string& text, T* out) {
  const char* end = text.data() + text.size();
  const std::from_chars_result r = std::from_chars(text.data(), end, *out);
  return r.ec == std::errc() && r.ptr == end && *out >= 0;
}

}  // namespace

Fault fault_from_env() {
  Fault f;
  const char* env = std::getenv("TB_FAULT");
  if (!env || !*env) return f;
  const std::string text = env;
  const auto refuse = [&text](const std::string& why) {
    return std::invalid_argument("TB_FAULT: " + why + " (allowed: rank=R,step=S,kind=throw|exit|kill|hang|nan|setup, "
                                 "each once, R and S whole numbers >= 0, S >= 1 unless kind is exit|kill|hang; "
                                 "got '" + text + "')");
  };
  bool has_rank = false, has_step = false, has_kind = false;
  for (size_t at = 0;;) {  // every comma-separated item, empty ones included
    const size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw refuse("'" + item + "' is not key=value");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    bool* seen = k == "rank" ? &has_rank : k == "step" ? &has_step : k == "kind" ? &has_kind : nullptr;
    if (!seen) throw refuse("unknown key '" + k + "'");
    if (*seen) throw refuse(k + " given twice");
    *seen = true;
    if (k == "rank" && !whole_number(v, &f.rank)) throw refuse("rank '" + v + "' is not a whole number >= 0");
    if (k == "step" && !whole_number(v, &f.step)) throw refuse("step '" + v + "' is not a whole number >= 0");
    if (k == "kind") f.kind = v;
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (!has_rank || !has_step || !has_kind) {
    throw refuse(std::string("missing ") + (!has_rank ? "rank" : !has_step ? "step" : "kind"));
  }
  // Step 0 is before the rank joins the job (MPI_Init): only a rank that dies or hangs.
  const bool dies = f.kind == "exit" || f.kind == "kill" || f.kind == "hang";
  if (!dies && f.kind != "throw" && f.kind != "nan" && f.kind != "setup") throw refuse("unknown kind '" + f.kind + "'");
  if (f.step == 0 && !dies) throw refuse("step 0 (before joining the job) is for kind exit|kill|hang only");
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
