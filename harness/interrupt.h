// harness/interrupt.h — SIGINT and SIGTERM end a run or a suite cleanly: the
// handler only records the signal (and forwards it to the process group of a
// running child job); training stops at its next step check by throwing
// Interrupted, every row already written stays, and the process exits 128 + signal
// (130, 143). A child job that ignores the forwarded signal is killed after a grace period.
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>

namespace tb {

class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int sig);
  int signal() const { return sig_; }

 private:
  int sig_;
};

// Installs the handlers (idempotent). Only for processes that are not MPI ranks.
void install_interrupt_handlers();
// 0, or the first signal received.
int interrupt_signal();
// Throws Interrupted when a signal was received.
void throw_if_interrupted();
// While a child job runs in its own process group, signals are forwarded to it (0: none).
void set_child_process_group(pid_t pgid);
// "SIGINT" / "SIGTERM".
std::string signal_name(int sig);

}  // namespace tb
