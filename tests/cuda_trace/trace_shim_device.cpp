// tests/cuda_trace/trace_shim_device.cpp — the trace shim's fake driver and device facts
// and its device-memory ledger (knobs: trace_shim_state.h). Free memory of device d is
// TB_FAKE_FREE_MIB minus what this process holds there: its context (TB_FAKE_CONTEXT_MIB,
// charged when the device is first made current or touched), live cudaMalloc blocks,
// cuBLAS handles (TB_FAKE_CUBLAS_MIB each: their workspaces) and NCCL communicators
// (TB_FAKE_NCCL_MIB each: their buffers). Allocations beyond it fail as CUDA, cuBLAS and
// NCCL fail when a device is full.
#include <cuda_runtime_api.h>

#include <cstdlib>

#include "trace_shim_state.h"

namespace tb_trace_shim {
namespace {

long long env_ll(const char* name, long long fallback) {
  const char* e = std::getenv(name);
  return e && *e ? std::atoll(e) : fallback;
}

long long g_used[kMaxDevices] = {};
bool g_context[kMaxDevices] = {};

}  // namespace

int fake_driver_version() { return static_cast<int>(env_ll("TB_FAKE_DRIVER_VERSION", CUDART_VERSION)); }
bool driver_usable() { return fake_driver_version() >= CUDART_VERSION; }

int fake_cc() { return static_cast<int>(env_ll("TB_FAKE_CC", 90)); }

bool no_kernel_image() {
  const char* e = std::getenv("TB_FAKE_NO_KERNEL_IMAGE");
  return e && e[0] == '1';
}

size_t mib_knob(const char* name, size_t fallback_mib) {
  const long long v = env_ll(name, static_cast<long long>(fallback_mib));
  return v > 0 ? static_cast<size_t>(v) << 20 : 0;
}

size_t fake_total() { return size_t{80} << 30; }

size_t fake_free(int dev) {
  const long long limit = static_cast<long long>(mib_knob("TB_FAKE_FREE_MIB", 70 * 1024));
  const long long used = dev >= 0 && dev < kMaxDevices ? g_used[dev] : 0;
  return limit > used ? static_cast<size_t>(limit - used) : 0;
}

void touch_context(int dev) {
  if (dev < 0 || dev >= kMaxDevices || g_context[dev]) return;
  g_context[dev] = true;
  g_used[dev] += static_cast<long long>(mib_knob("TB_FAKE_CONTEXT_MIB", 0));
}

bool charge(int dev, size_t bytes) {
  touch_context(dev);
  if (dev < 0 || dev >= kMaxDevices || bytes > fake_free(dev)) return false;
  g_used[dev] += static_cast<long long>(bytes);
  return true;
}

void release(int dev, size_t bytes) {
  if (dev >= 0 && dev < kMaxDevices) g_used[dev] -= static_cast<long long>(bytes);
}

}  // namespace tb_trace_shim
