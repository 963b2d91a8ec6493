// harness/host_topology.h — the shape of this machine for env.json: packages (sockets),
// physical cores, SMT threads per core, NUMA nodes and caches through hwloc (where the
// build found libhwloc; otherwise "hwloc not available"), and the CPU frequency governor
// and clocks from Linux's /sys (where readable: VMs and containers often hide cpufreq).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

struct CacheLevel {
  int level = 0;             // 1, 2, 3, ...
  std::string type;          // "data", "instruction" or "unified"
  int64_t size_bytes = 0;    // one instance
  int line_bytes = 0;
  int instances = 0;         // how many of this size at this level (e.g. one L2 per core)
};

struct HostTopology {
  bool available = false;
  std::string why_not;       // when !available: "hwloc not available (built without libhwloc-dev)", ...
  std::string hwloc_version; // the hwloc the binary was built with, "2.9.0"
  int sockets = 0;           // hwloc packages
  int cores = 0;             // physical cores (0 where the OS does not say)
  int pus = 0;               // hardware threads (logical CPUs) of the machine
  int threads_per_core = 0;  // SMT: the most hardware threads on one core
  int numa_nodes = 0;
  int allowed_pus = 0;       // of pus, those this process may run on (cpuset, affinity)
  std::vector<CacheLevel> caches;  // by level, then type
};

// The machine's topology (all of it, including CPUs outside this process's cpuset).
HostTopology host_topology();

struct CpuFrequency {
  std::string governor;      // cpu0's cpufreq scaling governor ("performance", ...); "" when unreadable
  double cur_mhz = -1;       // cpu0's current clock (cpufreq, else /proc/cpuinfo "cpu MHz"); -1 unknown
  double max_mhz = -1;       // cpu0's highest clock (cpufreq cpuinfo_max_freq); -1 unknown
  std::string source;        // where the numbers came from, or why they are missing
};

// Read from ROOT/sys/devices/system/cpu/cpu0/cpufreq and ROOT/proc/cpuinfo (ROOT "" is the
// machine; tests pass a folder that imitates it).
CpuFrequency cpu_frequency(const std::string& root = "");

}  // namespace tb
