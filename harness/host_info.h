// harness/host_info.h — facts about this machine for `trainbench devices` and env.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

struct HostInfo {
  std::string hostname, os, kernel, cpu_model;
  int logical_cores = 0;
  int64_t memory_bytes = 0;
};

HostInfo host_info();

// Peak resident set size of this process so far (getrusage), in bytes.
int64_t peak_rss_bytes();

struct GpuInfo {
  int index = 0;
  std::string name, pci_bus_id, compute_capability;
  int sm_count = 0;
  int64_t memory_total_bytes = 0, memory_free_bytes = 0;
  int clock_mhz = 0, memory_clock_mhz = 0;
};

struct GpuInventory {
  bool usable = false;
  std::string reason;              // why no GPU is usable (when !usable)
  std::vector<GpuInfo> gpus;
  std::vector<std::vector<int>> peer_access;  // [i][j] = 1 if i can access j
  std::string driver_version, runtime_version;
};

// Without a CUDA build: usable = false, reason "built without CUDA". Free memory is
// read for the current device only (a context on every GPU would cost each rank of a
// multi-process job memory on every GPU), or for all when free_memory_of_all
// (`trainbench devices`); unread values are -1.
GpuInventory gpu_inventory(bool free_memory_of_all = false);

// Text for `trainbench devices`.
std::string format_devices(const HostInfo& h, const GpuInventory& g);

}  // namespace tb
