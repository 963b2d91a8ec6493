// tests/nvml/fake_nvml.cpp — libtb_fake_nvml.so: a FAKE NVML for the CPU tests. trainbench
// loads it instead of libnvidia-ml.so.1 when TB_NVML_LIBRARY names it (harness/nvml.h),
// and reads scripted GPUs from it: fixed facts (fake_nvml_values.h) and time series.
//
// GPUs: TB_FAKE_NVML_GPUS (default 2), NVML index i at PCI 0000:<i>:00.0 — the bus ids
// the fake CUDA runtime (tests/cuda_trace) gives CUDA device i, so the two agree.
// Series, one value per call of that getter on that GPU, the last repeated once the
// list is used up; ';' separates GPUs (GPU g takes list g, or the last list):
//   TB_FAKE_NVML_SM_MHZ      nvmlDeviceGetClockInfo(NVML_CLOCK_SM)      e.g. "1980,1410,1755;1500"
//   TB_FAKE_NVML_POWER_MW    nvmlDeviceGetPowerUsage (mW)
//   TB_FAKE_NVML_TEMP_C      nvmlDeviceGetTemperature
//   TB_FAKE_NVML_REASONS     nvmlDeviceGetCurrentClocksEventReasons (decimal bits)
// Energy: nvmlDeviceGetTotalEnergyConsumption starts at kEnergyStartMj and grows by
// TB_FAKE_NVML_ENERGY_STEP_MJ (per GPU, ';'-separated) at every call, so the delta of
// two consecutive reads is exactly that step. TB_FAKE_NVML_NO_ENERGY=1: not supported.
// Links: TB_FAKE_NVML_NVLINKS="0-1:4,2-3:2" (4 NVLinks join GPUs 0 and 1, ...);
// TB_FAKE_NVML_NVSWITCH=N gives every GPU N links to an NVSwitch; the PCIe common
// ancestor of GPUs i and j is "several bridges" (PXB) when i/2 == j/2, else "system" (SYS).
// TB_FAKE_NVML_INIT_FAIL=1: nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/nvml/fake_nvml_values.h"

namespace {

using Series = std::vector<std::vector<unsigned long long>>;  // [gpu][call]
std::mutex g_mu;

int gpus() {
  const char* v = std::getenv("TB_FAKE_NVML_GPUS");
  return v ? std::atoi(v) : 2;
}

Series parse_series(const char* var) {
  Series s;
  const char* v = std::getenv(var);
  if (!v) return s;
  std::stringstream all(v);
  std::string gpu;
  while (std::getline(all, gpu, ';')) {
    std::vector<unsigned long long> one;
    std::stringstream items(gpu);
    std::string item;
    while (std::getline(items, item, ',')) one.push_back(std::strtoull(item.c_str(), nullptr, 10));
    s.push_back(one);
  }
  return s;
}

// The next value of `var`'s series for GPU g (cursor per variable and GPU); false when unscripted.
bool next(const char* var, int g, unsigned long long* out) {
  static std::map<std::string, Series> series;
  static std::map<std::string, std::vector<size_t>> cursor;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!series.count(var)) series[var] = parse_series(var);
  const Series& s = series[var];
  if (s.empty()) return false;
  const std::vector<unsigned long long>& list = s[std::min(static_cast<size_t>(g), s.size() - 1)];
  if (list.empty()) return false;
  std::vector<size_t>& c = cursor[var];
  if (c.size() <= static_cast<size_t>(g)) c.resize(static_cast<size_t>(g) + 1, 0);
  *out = list[std::min(c[static_cast<size_t>(g)], list.size() - 1)];
  ++c[static_cast<size_t>(g)];
  return true;
}

// Handles are 1-based indices in disguise; the library never dereferences them.
struct nvmlDevice_st;
nvmlDevice_st* handle(int i) { return reinterpret_cast<nvmlDevice_st*>(static_cast<uintptr_t>(i + 1)); }
int index_of(nvmlDevice_st* d) {
  const int i = static_cast<int>(reinterpret_cast<uintptr_t>(d)) - 1;
  return i >= 0 && i < gpus() ? i : -1;
}

// nvmlPciInfo_t (v3 layout; harness/nvml.h has the same struct).
struct PciInfo {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};

void fill_pci(int i, PciInfo* p) {
  std::memset(p, 0, sizeof *p);
  p->bus = static_cast<unsigned>(i);
  p->pci_device_id = 0x233010de;
  std::snprintf(p->bus_id_legacy, sizeof p->bus_id_legacy, "0000:%02x:00.0", static_cast<unsigned>(i) & 0xffu);
  std::snprintf(p->bus_id, sizeof p->bus_id, "00000000:%02x:00.0", static_cast<unsigned>(i) & 0xffu);
}

// The peer at the far end of GPU x's NVLink `link` (-1: link inactive, -2: an NVSwitch).
int nvlink_peer(int x, unsigned link) {
  unsigned at = 0;
  if (const char* v = std::getenv("TB_FAKE_NVML_NVLINKS")) {
    std::stringstream all(v);
    std::string item;
    while (std::getline(all, item, ',')) {
      int a = -1, b = -1;
      unsigned n = 0;
      if (std::sscanf(item.c_str(), "%d-%d:%u", &a, &b, &n) != 3 || (a != x && b != x)) continue;
      if (link < at + n) return a == x ? b : a;
      at += n;
    }
  }
  const char* sw = std::getenv("TB_FAKE_NVML_NVSWITCH");
  if (sw && link < at + static_cast<unsigned>(std::atoi(sw))) return -2;
  return -1;
}

constexpr int kSuccess = 0, kInvalidArgument = 2, kNotSupported = 3, kNotFound = 6, kDriverNotLoaded = 9;

}  // namespace

extern "C" {

int nvmlInit_v2() { return std::getenv("TB_FAKE_NVML_INIT_FAIL") ? kDriverNotLoaded : kSuccess; }
int nvmlShutdown() { return kSuccess; }
const char* nvmlErrorString(int r) {
  switch (r) {
    case kSuccess: return "Success";
    case kInvalidArgument: return "Invalid Argument";
    case kNotSupported: return "Not Supported";
    case kNotFound: return "Not Found";
    case kDriverNotLoaded: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}
int nvmlSystemGetDriverVersion(char* b, unsigned n) {
  std::snprintf(b, n, "%s", tb::fake_nvml::kDriverVersion);
  return kSuccess;
}
int nvmlSystemGetNVMLVersion(char* b, unsigned n) {
  std::snprintf(b, n, "%s", tb::fake_nvml::kNvmlVersion);
  return kSuccess;
}
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = static_cast<unsigned>(gpus());
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_st** d) {
  if (static_cast<int>(i) >= gpus()) return kInvalidArgument;
  *d = handle(static_cast<int>(i));
  return kSuccess;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* id, nvmlDevice_st** d) {
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return kInvalidArgument;
  if (dom != 0 || dev != 0 || fn != 0 || static_cast<int>(bus) >= gpus()) return kNotFound;
  *d = handle(static_cast<int>(bus));
  return kSuccess;
}
int nvmlDeviceGetName(nvmlDevice_st* d, char* b, unsigned n) {
  if (index_of(d) < 0) return kInvalidArgument;
  std::snprintf(b, n, "%s %d", tb::fake_nvml::kName, index_of(d));
  return kSuccess;
}
int nvmlDeviceGetPciInfo_v3(nvmlDevice_st* d, PciInfo* p) {
  if (index_of(d) < 0) return kInvalidArgument;
  fill_pci(index_of(d), p);
  return kSuccess;
}
int nvmlDeviceGetMaxClockInfo(nvmlDevice_st* d, int type, unsigned* mhz) {
  if (index_of(d) < 0) return kInvalidArgument;
  *mhz = type == 1 ? tb::fake_nvml::kMaxSmMhz : type == 0 ? tb::fake_nvml::kMaxGraphicsMhz : tb::fake_nvml::kMaxMemMhz;
  return kSuccess;
}
int nvmlDeviceGetApplicationsClock(nvmlDevice_st* d, int type, unsigned* mhz) {
  if (index_of(d) < 0) return kInvalidArgument;
  if (type != 0 && type != 2) return kNotSupported;
  *mhz = type == 0 ? tb::fake_nvml::kAppGraphicsMhz : tb::fake_nvml::kAppMemMhz;
  return kSuccess;
}
int nvmlDeviceGetClockInfo(nvmlDevice_st* d, int type, unsigned* mhz) {
  unsigned long long v = 0;
  if (index_of(d) < 0 || type != 1) return kInvalidArgument;
  if (!next("TB_FAKE_NVML_SM_MHZ", index_of(d), &v)) return kNotSupported;
  *mhz = static_cast<unsigned>(v);
  return kSuccess;
}
int nvmlDeviceGetPowerManagementLimit(nvmlDevice_st* d, unsigned* mw) {
  if (index_of(d) < 0) return kInvalidArgument;
  *mw = tb::fake_nvml::kPowerLimitMw;
  return kSuccess;
}
int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_st* d, unsigned* mw) {
  if (index_of(d) < 0) return kInvalidArgument;
  *mw = tb::fake_nvml::kEnforcedPowerLimitMw;
  return kSuccess;
}
int nvmlDeviceGetEccMode(nvmlDevice_st* d, int* current, int* pending) {
  if (index_of(d) < 0) return kInvalidArgument;
  *current = tb::fake_nvml::kEccCurrent;
  *pending = tb::fake_nvml::kEccPending;
  return kSuccess;
}
int nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_st* d, unsigned* v) {
  *v = tb::fake_nvml::kMaxPcieGen;
  return index_of(d) < 0 ? kInvalidArgument : kSuccess;
}
int nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_st* d, unsigned* v) {
  *v = tb::fake_nvml::kMaxPcieWidth;
  return index_of(d) < 0 ? kInvalidArgument : kSuccess;
}
int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_st* d, unsigned* v) {
  *v = tb::fake_nvml::kPcieGen;
  return index_of(d) < 0 ? kInvalidArgument : kSuccess;
}
int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_st* d, unsigned* v) {
  *v = tb::fake_nvml::kPcieWidth;
  return index_of(d) < 0 ? kInvalidArgument : kSuccess;
}
int nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_st* a, nvmlDevice_st* b, int* level) {
  if (index_of(a) < 0 || index_of(b) < 0) return kInvalidArgument;
  *level = index_of(a) / 2 == index_of(b) / 2 ? 20 : 50;  // NVML_TOPOLOGY_MULTIPLE : _SYSTEM
  return kSuccess;
}
int nvmlDeviceGetNvLinkState(nvmlDevice_st* d, unsigned link, int* active) {
  if (index_of(d) < 0 || link >= 18) return kInvalidArgument;
  *active = nvlink_peer(index_of(d), link) == -1 ? 0 : 1;
  return kSuccess;
}
int nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_st* d, unsigned link, int* type) {
  if (index_of(d) < 0 || link >= 18) return kInvalidArgument;
  *type = nvlink_peer(index_of(d), link) == -2 ? 2 : 0;  // NVML_NVLINK_DEVICE_TYPE_SWITCH : _GPU
  return kSuccess;
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_st* d, unsigned link, PciInfo* p) {
  if (index_of(d) < 0 || link >= 18) return kInvalidArgument;
  const int peer = nvlink_peer(index_of(d), link);
  if (peer < 0) return kNotSupported;
  fill_pci(peer, p);
  return kSuccess;
}
int nvmlDeviceGetPowerUsage(nvmlDevice_st* d, unsigned* mw) {
  unsigned long long v = 0;
  if (index_of(d) < 0) return kInvalidArgument;
  if (!next("TB_FAKE_NVML_POWER_MW", index_of(d), &v)) return kNotSupported;
  *mw = static_cast<unsigned>(v);
  return kSuccess;
}
int nvmlDeviceGetTemperature(nvmlDevice_st* d, int sensor, unsigned* c) {
  unsigned long long v = 0;
  if (index_of(d) < 0 || sensor != 0) return kInvalidArgument;
  if (!next("TB_FAKE_NVML_TEMP_C", index_of(d), &v)) return kNotSupported;
  *c = static_cast<unsigned>(v);
  return kSuccess;
}
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_st* d, unsigned long long* bits) {
  if (index_of(d) < 0) return kInvalidArgument;
  if (!next("TB_FAKE_NVML_REASONS", index_of(d), bits)) return kNotSupported;
  return kSuccess;
}
int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_st* d, unsigned long long* mj) {
  const int i = index_of(d);
  if (i < 0) return kInvalidArgument;
  if (std::getenv("TB_FAKE_NVML_NO_ENERGY")) return kNotSupported;
  static std::map<int, unsigned long long> counter;
  unsigned long long step = 0;
  if (!next("TB_FAKE_NVML_ENERGY_STEP_MJ", i, &step)) step = 0;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!counter.count(i)) counter[i] = tb::fake_nvml::kEnergyStartMj;
  counter[i] += step;
  *mj = counter[i];
  return kSuccess;
}

}  // extern "C"
