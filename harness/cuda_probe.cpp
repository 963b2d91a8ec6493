// harness/cuda_probe.cpp — GPU inventory through the CUDA runtime (CUDA builds only).
// On a machine without a usable device every call fails cleanly and the reason is
// reported instead of a GPU list: a driver older than the runtime, no driver at all
// (libcuda.so.1 does not load), or CUDA's own error (gpu_readiness.h words them).
// gpu_code_problem probes one of our kernels on a GPU: no image of this build for it.
#include <dlfcn.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#if defined(TB_HAVE_NCCL)
#include <nccl.h>
#endif

#include <fstream>
#include <string>

#include "harness/gpu_readiness.h"
#include "harness/host_info.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda_arch.h"

namespace tb {
namespace {

std::string version_string(int v) { return cuda_version_text(v); }  // 13000 -> "13.0"

// Whether the driver's user-space library loads (the runtime dlopens the same name).
bool libcuda_loads() {
  void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h) ::dlclose(h);
  return h != nullptr;
}

// The kernel module's version from "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  ...".
std::string driver_release() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "";
  const auto at = line.find("Kernel Module");
  if (at == std::string::npos) return "";
  const auto b = line.find_first_not_of(' ', at + 13);
  const auto e = b == std::string::npos ? b : line.find(' ', b);
  return b == std::string::npos ? "" : line.substr(b, e - b);
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
    DriverFacts f;
    f.driver_cuda = drv;
    f.runtime_cuda = rt;
    f.error = err != cudaSuccess ? cudaGetErrorString(err) : "";
    f.device_count = count;
    if (drv == 0) f.libcuda_loads = libcuda_loads();  // only asked when the driver gave no version
    if (drv > 0) f.driver_release = driver_release();
    g.reason = no_device_reason(f);
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

std::string gpu_code_problem(int device) {
  const cudaError_t err = cuda::probe_kernel_image(device);
  if (err == cudaSuccess) return "";
  if (err == cudaErrorNoKernelImageForDevice || err == cudaErrorInvalidDeviceFunction ||
      err == cudaErrorUnsupportedPtxVersion) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, device) != cudaSuccess) cudaGetLastError();
    std::string why = no_kernel_image_message(p.major, p.minor, TB_CUDA_ARCHS);
    if (err == cudaErrorUnsupportedPtxVersion) why += " (the driver is too old for this build's PTX)";
    return why;
  }
  return "GPU " + std::to_string(device) + " cannot run this build's kernels: " + cudaGetErrorString(err);
}

std::string gpu_unusable_reason(int device) {
  const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
  if (!g.usable) return g.reason;
  if (device >= static_cast<int>(g.gpus.size())) {
    return "no GPU " + std::to_string(device) + " (found " + std::to_string(g.gpus.size()) + ")";
  }
  return gpu_code_problem(device);
}

}  // namespace tb
