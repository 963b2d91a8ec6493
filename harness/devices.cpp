// harness/devices.cpp — host facts from /proc and uname, and the devices listing.
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "harness/host_info.h"

namespace tb {
namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\"");
  const auto e = s.find_last_not_of(" \t\"\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// First "key: value" (or key=value) line's value from a /proc- or os-release-style file.
std::string field_from(const char* path, const std::string& key, char sep) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      const auto p = line.find(sep);
      if (p != std::string::npos) return trim(line.substr(p + 1));
    }
  }
  return "";
}

}  // namespace

HostInfo host_info() {
  HostInfo h;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) h.hostname = name;
  struct utsname u {};
  if (::uname(&u) == 0) h.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  h.os = field_from("/etc/os-release", "PRETTY_NAME", '=');
  h.cpu_model = field_from("/proc/cpuinfo", "model name", ':');
  if (h.cpu_model.empty()) h.cpu_model = field_from("/proc/cpuinfo", "Model", ':');  // some Arm kernels
  h.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  const std::string mem = field_from("/proc/meminfo", "MemTotal", ':');  // "24565432 kB"
  if (!mem.empty()) h.memory_bytes = std::stoll(mem) * 1024;
  return h;
}

int64_t peak_rss_bytes() {
  // VmHWM, not getrusage: clear_refs resets the address space's high-water mark, which
  // ru_maxrss also holds, but ru_maxrss keeps the peak any exited thread saw (an OpenMP
  // pool released by cpu-hogwild), so it may stay at an old peak.
  if (const std::string hwm = field_from("/proc/self/status", "VmHWM", ':'); !hwm.empty()) {
    return static_cast<int64_t>(std::stoll(hwm)) * 1024;  // "123456 kB"
  }
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
#ifdef __APPLE__
  return static_cast<int64_t>(ru.ru_maxrss);  // macOS reports bytes (no /proc there)
#else
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux and the BSDs report KiB
#endif
}

bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";  // 5: reset the peak resident set to the current one (proc(5))
  clear.close();
  return static_cast<bool>(clear);
}

std::string format_devices(const HostInfo& h, const GpuInventory& g) {
  std::ostringstream os;
  os << "host     " << h.hostname << " (" << h.os << ", " << h.kernel << ")\n";
  os << "cpu      " << h.cpu_model << ", " << h.logical_cores << " logical cores\n";
  os << "memory   " << h.memory_bytes / (1024 * 1024) << " MiB\n";
  if (!g.usable) {
    os << "gpus     none usable: " << g.reason << "\n";
    return os.str();
  }
  os << "driver   " << g.driver_version << ", runtime " << g.runtime_version << ", cuBLAS " << g.cublas_version
     << ", NCCL " << (g.nccl_version.empty() ? "none (built without NCCL)" : g.nccl_version) << "\n";
  for (const GpuInfo& d : g.gpus) {
    os << "gpu " << d.index << "    " << d.name << ", cc " << d.compute_capability << ", " << d.sm_count
       << " SMs, " << d.memory_total_bytes / (1024 * 1024) << " MiB total, "
       << (d.memory_free_bytes < 0 ? std::string("?") : std::to_string(d.memory_free_bytes / (1024 * 1024)))
       << " MiB free, " << d.clock_mhz << " MHz, mem " << d.memory_clock_mhz << " MHz, pci " << d.pci_bus_id << "\n";
  }
  if (g.gpus.size() > 1) {
    os << "peer access (row can access column):\n     ";
    for (size_t j = 0; j < g.gpus.size(); ++j) os << " " << j;
    os << "\n";
    for (size_t i = 0; i < g.peer_access.size(); ++i) {
      os << "  " << i << "  ";
      for (int v : g.peer_access[i]) os << " " << (v ? "Y" : ".");
      os << "\n";
    }
  }
  return os.str();
}

#if !defined(TB_HAVE_CUDA)
GpuInventory gpu_inventory(FreeMemory) {
  GpuInventory g;
  g.reason = "built without CUDA (no nvcc found at configure time, or TB_ENABLE_CUDA=OFF)";
  return g;
}
std::string gpu_code_problem(int) { return ""; }
std::string gpu_unusable_reason(int) { return gpu_inventory(FreeMemory::kNotRead).reason; }
#endif

}  // namespace tb
