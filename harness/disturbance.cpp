// harness/disturbance.cpp — see disturbance.h.
#include "harness/disturbance.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

namespace tb {

std::string kernel_key() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (std::getline(in, id) && !id.empty()) return "boot_id " + id;
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string("host ") + name : std::string("unknown");
}

double own_cpu_seconds() {
  rusage ru{};
  if (::getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

CpuSnapshot cpu_snapshot() {
  CpuSnapshot s;
  s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  s.cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  s.own_s = own_cpu_seconds();
  std::ifstream in("/proc/stat");
  std::string line;
  if (!std::getline(in, line) || line.rfind("cpu ", 0) != 0) return s;
  // cpu user nice system idle iowait irq softirq steal guest guest_nice (USER_HZ ticks)
  std::istringstream f(line.substr(4));
  double v[8] = {};
  for (double& x : v) f >> x;
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  if (hz <= 0) return s;
  s.busy_s = (v[0] + v[1] + v[2] + v[5] + v[6]) / hz;
  s.steal_s = v[7] / hz;
  s.ok = true;
  return s;
}

Disturbance disturbance_between(const CpuSnapshot& a, const CpuSnapshot& b, double own_s_job) {
  Disturbance d;
  const double host_s = (b.wall_s - a.wall_s) * std::max(1, b.cpus);
  if (!a.ok || !b.ok || host_s <= 0) return d;
  // Tick granularity (10 ms per CPU) can make the difference slightly negative: clamp.
  d.others_share = std::clamp((b.busy_s - a.busy_s - own_s_job) / host_s, 0.0, 1.0);
  d.steal_share = std::clamp((b.steal_s - a.steal_s) / host_s, 0.0, 1.0);
  return d;
}

JudgedWindow judged_window(double rep_s, double all_s) {
  if (rep_s >= kMinJudgedS) return JudgedWindow::kOwn;
  return all_s >= kMinJudgedS ? JudgedWindow::kSinceFirst : JudgedWindow::kNone;
}

}  // namespace tb
