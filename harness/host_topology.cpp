// harness/host_topology.cpp — see host_topology.h. hwloc part compiled where CMake found
// hwloc (TB_HAVE_HWLOC); the frequency part reads Linux's sysfs/procfs files directly.
#include "harness/host_topology.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <tuple>

#if defined(TB_HAVE_HWLOC)
#include <hwloc.h>
#endif

namespace tb {

#if defined(TB_HAVE_HWLOC)
namespace {

const char* cache_type_name(hwloc_obj_cache_type_e t) {
  switch (t) {
    case HWLOC_OBJ_CACHE_DATA: return "data";
    case HWLOC_OBJ_CACHE_INSTRUCTION: return "instruction";
    default: return "unified";
  }
}

int count_of(hwloc_topology_t topo, hwloc_obj_type_t type) {
  return std::max(0, hwloc_get_nbobjs_by_type(topo, type));
}

}  // namespace

HostTopology host_topology() {
  HostTopology t;
#if defined(HWLOC_VERSION)
  t.hwloc_version = HWLOC_VERSION;  // hwloc/autogen/config.h
#endif
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) {
    t.why_not = "hwloc_topology_init failed";
    return t;
  }
#if HWLOC_API_VERSION >= 0x00020100
  // The whole machine, not only this process's cpuset (allowed_pus says what that is).
  hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
#endif
  // hwloc 2 drops instruction caches unless asked; identical cache levels are kept too.
  hwloc_topology_set_cache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
  hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    t.why_not = "hwloc_topology_load failed";
    return t;
  }
  t.available = true;
  t.sockets = count_of(topo, HWLOC_OBJ_PACKAGE);
  t.cores = count_of(topo, HWLOC_OBJ_CORE);
  t.pus = count_of(topo, HWLOC_OBJ_PU);
  t.numa_nodes = count_of(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < t.cores; ++i) {
    const hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, static_cast<unsigned>(i));
    t.threads_per_core = std::max(t.threads_per_core, hwloc_bitmap_weight(core->cpuset));
  }
  t.allowed_pus = std::max(0, hwloc_bitmap_weight(hwloc_topology_get_allowed_cpuset(topo)));

  // Caches: one entry per (level, type, size), counting its instances.
  for (hwloc_obj_type_t type : {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE,
                                HWLOC_OBJ_L5CACHE, HWLOC_OBJ_L1ICACHE, HWLOC_OBJ_L2ICACHE, HWLOC_OBJ_L3ICACHE}) {
    for (int i = 0; i < count_of(topo, type); ++i) {
      const hwloc_obj_t o = hwloc_get_obj_by_type(topo, type, static_cast<unsigned>(i));
      const CacheLevel c{static_cast<int>(o->attr->cache.depth), cache_type_name(o->attr->cache.type),
                         static_cast<int64_t>(o->attr->cache.size), static_cast<int>(o->attr->cache.linesize), 1};
      auto same = [&](const CacheLevel& x) {
        return x.level == c.level && x.type == c.type && x.size_bytes == c.size_bytes;
      };
      if (auto it = std::find_if(t.caches.begin(), t.caches.end(), same); it != t.caches.end()) ++it->instances;
      else t.caches.push_back(c);
    }
  }
  std::sort(t.caches.begin(), t.caches.end(), [](const CacheLevel& a, const CacheLevel& b) {
    return std::tie(a.level, a.type, a.size_bytes) < std::tie(b.level, b.type, b.size_bytes);
  });
  hwloc_topology_destroy(topo);
  return t;
}

#else

HostTopology host_topology() {
  HostTopology t;
  t.why_not = "hwloc not available (built without libhwloc-dev)";
  return t;
}

#endif

namespace {

// The first line of a small file, "" when it cannot be read.
std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

double khz_to_mhz(const std::string& s) {
  try {
    return s.empty() ? -1 : std::stod(s) / 1000.0;
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

CpuFrequency cpu_frequency(const std::string& root) {
  CpuFrequency f;
  const std::string cpufreq = root + "/sys/devices/system/cpu/cpu0/cpufreq/";
  f.governor = first_line(cpufreq + "scaling_governor");
  f.cur_mhz = khz_to_mhz(first_line(cpufreq + "scaling_cur_freq"));
  f.max_mhz = khz_to_mhz(first_line(cpufreq + "cpuinfo_max_freq"));
  if (f.cur_mhz >= 0 || f.max_mhz >= 0 || !f.governor.empty()) {
    f.source = "cpufreq (/sys/devices/system/cpu/cpu0/cpufreq)";
    if (f.cur_mhz >= 0) return f;
  }
  // No cpufreq (typical in a VM or container): the kernel's last sample of cpu0's clock.
  std::ifstream in(root + "/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    try {
      f.cur_mhz = std::stod(line.substr(line.find(':') + 1));
    } catch (const std::exception&) {
      break;
    }
    f.source = f.source.empty() ? "/proc/cpuinfo (no cpufreq: governor and max clock not readable)"
                                : f.source + "; current clock from /proc/cpuinfo";
    return f;
  }
  if (f.source.empty()) f.source = "not readable (no cpufreq in /sys, no \"cpu MHz\" in /proc/cpuinfo)";
  return f;
}

}  // namespace tb
