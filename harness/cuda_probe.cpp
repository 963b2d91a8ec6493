// harness/cuda_probe.cpp — GPU inventory through the CUDA runtime (CUDA builds only).
// On a machine without a usable device every call fails cleanly and the reason
// (cudaGetErrorString) is reported instead of a GPU list.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#if defined(TB_HAVE_NCCL)
#include <nccl.h>
#endif

#include <string>

#include "harness/host_info.h"

namespace tb {
namespace {

std::string version_string(int v) {  // 13000 -> "13.0"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// The cuBLAS library loaded: cublasGetProperty needs no handle and no context.
std::string cublas_version() {
  int v[3] = {};
  const libraryPropertyType parts[3] = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
  for (int i = 0; i < 3; ++i) {
    if (cublasGetProperty(parts[i], &v[i]) != CUBLAS_STATUS_SUCCESS) return "unknown";
  }
  return std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
}

// The NCCL library loaded, "" in builds without NCCL. Its code is major*10000 +
// minor*100 + patch since 2.9 (22809 -> "2.28.9"), major*1000 + minor*100 + patch before.
std::string nccl_version() {
#if defined(TB_HAVE_NCCL)
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  const int major = v >= 10000 ? v / 10000 : v / 1000;
  const int minor = v >= 10000 ? (v % 10000) / 100 : (v % 1000) / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
#else
  return "";
#endif
}

// Free memory of every GPU (FreeMemory::kAllDevices): each made current in turn — which
// creates its primary context — then the caller's device again. Unread stays -1.
void read_free_memory(GpuInventory* g) {
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) cudaGetLastError();
  for (GpuInfo& d : g->gpus) {
    size_t free_b = 0, total_b = 0;
    if (cudaSetDevice(d.index) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
      d.memory_free_bytes = static_cast<int64_t>(free_b);
    } else {
      cudaGetLastError();
    }
  }
  if (cudaSetDevice(current) != cudaSuccess) cudaGetLastError();
}

}  // namespace

// Only context-free queries unless kAllDevices: device count, properties, attributes,
// PCI ids and peer access name their device and need no context; cudaSetDevice and
// cudaMemGetInfo are left to read_free_memory.
GpuInventory gpu_inventory(FreeMemory free_memory) {
  GpuInventory g;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  g.runtime_version = version_string(rt);
  g.driver_version = drv ? version_string(drv) : "none";
  g.cublas_version = cublas_version();
  g.nccl_version = nccl_version();
  if (err != cudaSuccess || count == 0) {
    g.reason = std::string("no CUDA device (") + (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") + ")";
    cudaGetLastError();  // clear the sticky error for later callers
    return g;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    GpuInfo d;
    d.index = i;
    d.name = p.name;
    d.compute_capability = std::to_string(p.major) + "." + std::to_string(p.minor);
    d.sm_count = p.multiProcessorCount;
    d.memory_total_bytes = static_cast<int64_t>(p.totalGlobalMem);
    char bus[32] = {};
    cudaDeviceGetPCIBusId(bus, sizeof bus, i);
    d.pci_bus_id = bus;
    int clk = 0, mclk = 0;
    cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, i);
    cudaDeviceGetAttribute(&mclk, cudaDevAttrMemoryClockRate, i);
    d.clock_mhz = clk / 1000;
    d.memory_clock_mhz = mclk / 1000;
    g.gpus.push_back(d);
  }
  g.peer_access.assign(g.gpus.size(), std::vector<int>(g.gpus.size(), 0));
  for (size_t i = 0; i < g.gpus.size(); ++i) {
    for (size_t j = 0; j < g.gpus.size(); ++j) {
      int ok = i == j;
      if (i != j) cudaDeviceCanAccessPeer(&ok, g.gpus[i].index, g.gpus[j].index);
      g.peer_access[i][j] = ok;
    }
  }
  g.usable = !g.gpus.empty();
  if (!g.usable) g.reason = "no CUDA device (properties could not be read)";
  if (g.usable && free_memory == FreeMemory::kAllDevices) read_free_memory(&g);
  return g;
}

}  // namespace tb
