// harness/interrupt.cpp — see interrupt.h.
#include "harness/interrupt.h"

#include <signal.h>

#include <atomic>
#include <csignal>

namespace tb {
namespace {

volatile std::sig_atomic_t g_signal = 0;
std::atomic<pid_t> g_child_group{0};

extern "C" void on_signal(int sig) {
  if (g_signal == 0) g_signal = sig;
  const pid_t g = g_child_group.load();
  if (g > 0) ::kill(-g, sig);  // async-signal-safe
}

}  // namespace

Interrupted::Interrupted(int sig)
    : std::runtime_error("interrupted by " + signal_name(sig) + ": rows of finished repetitions are kept"),
      sig_(sig) {}

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking wait returns EINTR and looks at the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int interrupt_signal() { return g_signal; }

void throw_if_interrupted() {
  if (g_signal != 0) throw Interrupted(g_signal);
}

void set_child_process_group(pid_t pgid) { g_child_group.store(pgid); }

std::string signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(sig);
}

}  // namespace tb
