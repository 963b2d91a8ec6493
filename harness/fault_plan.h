// harness/fault_plan.h — injected faults for the fault tests: one plan, read from
// TB_FAULT, with the hooks every trainer that takes faults (cpu-ddp, cuda-ddp,
// cpu-hogwild) calls at the same points: building, before a step, on a step's loss.
#pragma once

#include <cstdint>
#include <string>

namespace tb {

// Fault injection for tests (environment variable TB_FAULT="rank=R,step=S,kind=K",
// K one of throw, exit, kill, hang, nan): the fault fires on rank R at its S-th
// training step (1-based, warm-up included; S = 0: before the rank joins its job, in
// MPI_Init's place, for exit, kill and hang); kind setup makes rank R's trainer
// fail while it is built (before any step), a failure of that rank alone.
// Every fault is announced on stderr as it fires, with the wall-clock time, so a test
// can bound how long the job takes to end *after the fault* (not from its start):
//   trainbench: fault injected at <CLOCK_REALTIME seconds> (kind K on rank R at step S)
struct Fault {
  int rank = -1;
  int64_t step = -1;
  std::string kind;
  bool armed() const { return rank >= 0; }
  // The plan's hooks, called by every trainer that takes faults (cpu-ddp, cuda-ddp,
  // cpu-hogwild) at the same points:
  // step 0, before the process joins its multi-process job (MPI_Init): exit, kill or
  // hang there (the rank, from the launcher's environment);
  void before_join(int rank) const;
  // while the trainer is built: kind setup fails it (throws) on the fault's rank;
  void at_setup(int rank) const;
  // before step `step` (1-based) of `rank`: throw, exit, kill or hang there;
  void before_step(int rank, int64_t step) const;
  // on the step's loss: kind nan makes it NaN from the fault's step on (announced once).
  bool nan_at(int rank, int64_t step) const;
  mutable bool announced = false;
};
// The plan in TB_FAULT (unset or empty: none armed). Every comma-separated item is
// key=value, each of rank, step and kind exactly once, rank and step whole numbers
// >= 0; anything else throws std::invalid_argument naming TB_FAULT and what it allows.
// trainbench checks it as `run` and `suite` start (bad input, exit 2, nothing written),
// so the trainers' and ranks' later reads cannot throw.
Fault fault_from_env();

// Prints the "trainbench: fault injected at <seconds> (...)" line and flushes stderr.
void announce_fault(const std::string& kind, int rank, int64_t step);

// Announces and carries out a throw/exit/kill/hang fault (the message names rank and
// step), or kind setup: throws "injected fault: rank R failed to set up".
[[noreturn]] void inject_fault(const std::string& kind, int rank, int64_t step);

}  // namespace tb
