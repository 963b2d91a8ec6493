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

// Peak resident set size of this process, in bytes, since the last reset_peak_rss() (Linux's
// VmHWM), or since the process started where there is no VmHWM (getrusage).
int64_t peak_rss_bytes();

// Starts a new peak at what is resident now (writes 5 to /proc/self/clear_refs, Linux 4.0+),
// so that a configuration's peak_host_mem_bytes is its own, not the largest of the suite's
// configurations before it or of the ceilings' arrays. False where the kernel refuses it.
bool reset_peak_rss();

struct GpuInfo {
  int index = 0;
  std::string name, pci_bus_id, compute_capability;
  int sm_count = 0;
  int64_t memory_total_bytes = 0;
  int64_t memory_free_bytes = -1;  // -1: not read (FreeMemory::kNotRead)
  int clock_mhz = 0, memory_clock_mhz = 0;
};

struct GpuInventory {
  bool usable = false;
  std::string reason;              // why no GPU is usable (when !usable)
  std::vector<GpuInfo> gpus;
  std::vector<std::vector<int>> peer_access;  // [i][j] = 1 if i can access j
  std::string driver_version, runtime_version;  // "13.0"; driver "none" without a driver
  std::string cublas_version;                    // "13.1.0", from cuBLAS at run time; "" without CUDA
  std::string nccl_version;                      // "2.28.9", from NCCL at run time; "" when built without NCCL
};

// Whether gpu_inventory reads free memory. Reading it needs a context on the GPU
// (cudaSetDevice + cudaMemGetInfo; since CUDA 12 cudaSetDevice creates the primary
// context, ~300-500 MB of that GPU) — a backend's availability(), each rank of a
// multi-process job before it picks its GPU, env.json and the long-lived suite must
// not, so only the short-lived `trainbench devices` asks for it.
enum class FreeMemory {
  kNotRead,     // no context anywhere: no cudaSetDevice, no cudaMemGetInfo; free stays -1
  kAllDevices,  // every GPU made current in turn, then the caller's device again
};

// Without a CUDA build: usable = false, reason "built without CUDA".
GpuInventory gpu_inventory(FreeMemory free_memory);

// "" when this build has code GPU `device` runs — one of our kernels probed there
// (cudaFuncGetAttributes) — else why not, e.g. "this build has no kernel image for sm_75
// (built for sm_80, sm_90 + PTX compute_90): rebuild with CMAKE_CUDA_ARCHITECTURES=75".
// Leaves `device` current with its context made (the caller is about to use it; restoring
// the previous device would make a context there). Without CUDA: "".
std::string gpu_code_problem(int device);

// gpu_inventory's reason, or gpu_code_problem(device): "" when GPU `device` can run a GPU
// test or backend here (the GPU tests' gate, tests/cuda/gpu_gate.h).
std::string gpu_unusable_reason(int device = 0);

// Text for `trainbench devices`.
std::string format_devices(const HostInfo& h, const GpuInventory& g);

}  // namespace tb
