// harness/nvml.cpp — see nvml.h: dlopen, dlsym, nvmlInit_v2, once per process.
#include "harness/nvml.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace tb::nvml {
namespace {

struct Loaded {
  Api api{};
  bool ok = false;
  std::string reason;
};

// dlsym into a typed pointer (the signatures are nvml.h's, see Api).
template <class F>
void bind(void* lib, const char* symbol, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, symbol));
}

Loaded load() {
  Loaded l;
  const std::string name = library_name();
  if (name == "none") {  // the fake-GPU tests: fake CUDA devices must not meet a real driver's NVML
    l.reason = "NVML disabled: TB_NVML_LIBRARY=none";
    return l;
  }
  // RTLD_LOCAL: NVML's symbols stay out of the global namespace (a fake NVML in tests
  // must not interpose on anything else); never dlclose'd, the process keeps it.
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    l.reason = "NVML not found: " + name;
    return l;
  }
  Api& a = l.api;
  bind(lib, "nvmlInit_v2", &a.init);
  bind(lib, "nvmlErrorString", &a.error_string);
  bind(lib, "nvmlDeviceGetCount_v2", &a.device_count);
  bind(lib, "nvmlDeviceGetHandleByIndex_v2", &a.handle_by_index);
  bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", &a.handle_by_pci_bus_id);
  const char* missing = !a.init                   ? "nvmlInit_v2"
                        : !a.error_string         ? "nvmlErrorString"
                        : !a.device_count         ? "nvmlDeviceGetCount_v2"
                        : !a.handle_by_index      ? "nvmlDeviceGetHandleByIndex_v2"
                        : !a.handle_by_pci_bus_id ? "nvmlDeviceGetHandleByPciBusId_v2"
                                                  : nullptr;
  if (missing) {
    l.reason = "NVML unusable: " + name + " lacks " + missing;
    return l;
  }
  bind(lib, "nvmlSystemGetDriverVersion", &a.driver_version);
  bind(lib, "nvmlSystemGetNVMLVersion", &a.nvml_version);
  bind(lib, "nvmlDeviceGetName", &a.name);
  bind(lib, "nvmlDeviceGetPciInfo_v3", &a.pci_info);
  bind(lib, "nvmlDeviceGetMaxClockInfo", &a.max_clock);
  bind(lib, "nvmlDeviceGetApplicationsClock", &a.applications_clock);
  bind(lib, "nvmlDeviceGetClockInfo", &a.clock);
  bind(lib, "nvmlDeviceGetPowerManagementLimit", &a.power_limit);
  bind(lib, "nvmlDeviceGetEnforcedPowerLimit", &a.enforced_power_limit);
  bind(lib, "nvmlDeviceGetEccMode", &a.ecc_mode);
  bind(lib, "nvmlDeviceGetMaxPcieLinkGeneration", &a.max_pcie_gen);
  bind(lib, "nvmlDeviceGetMaxPcieLinkWidth", &a.max_pcie_width);
  bind(lib, "nvmlDeviceGetCurrPcieLinkGeneration", &a.pcie_gen);
  bind(lib, "nvmlDeviceGetCurrPcieLinkWidth", &a.pcie_width);
  bind(lib, "nvmlDeviceGetTopologyCommonAncestor", &a.common_ancestor);
  bind(lib, "nvmlDeviceGetNvLinkState", &a.nvlink_state);
  bind(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &a.nvlink_remote_pci);
  bind(lib, "nvmlDeviceGetNvLinkRemoteDeviceType", &a.nvlink_remote_type);
  bind(lib, "nvmlDeviceGetPowerUsage", &a.power_usage);
  bind(lib, "nvmlDeviceGetTemperature", &a.temperature);
  bind(lib, "nvmlDeviceGetCurrentClocksEventReasons", &a.clocks_event_reasons);
  if (!a.clocks_event_reasons) bind(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", &a.clocks_event_reasons);
  bind(lib, "nvmlDeviceGetTotalEnergyConsumption", &a.total_energy);
  const Return r = a.init();
  if (r != kSuccess) {
    l.reason = std::string("NVML init failed: ") + a.error_string(r);
    return l;
  }
  l.ok = true;
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();  // thread-safe once (C++11 statics)
  return l;
}

}  // namespace

std::string library_name() {
  const char* v = std::getenv("TB_NVML_LIBRARY");
  return v && *v ? v : "libnvidia-ml.so.1";
}

const Api* api() { return loaded().ok ? &loaded().api : nullptr; }

const std::string& unavailable_reason() { return loaded().reason; }

std::string error(Return r) {
  const Api* a = api();
  return a ? a->error_string(r) : "";
}

std::string reason_names(uint64_t bits) {
  static const struct {
    uint64_t bit;
    const char* name;
  } kNames[] = {{kReasonGpuIdle, "gpu_idle"},
                {kReasonApplicationsClocks, "applications_clocks"},
                {kReasonSwPowerCap, "sw_power_cap"},
                {kReasonHwSlowdown, "hw_slowdown"},
                {kReasonSyncBoost, "sync_boost"},
                {kReasonSwThermal, "sw_thermal_slowdown"},
                {kReasonHwThermal, "hw_thermal_slowdown"},
                {kReasonHwPowerBrake, "hw_power_brake_slowdown"},
                {kReasonDisplayClocks, "display_clocks"}};
  if (bits == 0) return "none";
  std::string s;
  uint64_t known = 0;
  for (const auto& n : kNames) {
    known |= n.bit;
    if (bits & n.bit) s += (s.empty() ? "" : "|") + std::string(n.name);
  }
  if (const uint64_t other = bits & ~known) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(other));
    s += (s.empty() ? "" : "|") + std::string(buf);
  }
  return s;
}

}  // namespace tb::nvml
