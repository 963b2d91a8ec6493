// harness/nvml.h — NVIDIA's management library (NVML), loaded at run time with dlopen,
// so that trainbench builds, links and runs where no driver is installed (no link-time
// dependency, no nvml.h needed). Only the entry points trainbench reads are declared,
// with the signatures of NVML's API reference; enums are passed as the ints they are.
// The library is libnvidia-ml.so.1 (the driver's), or TB_NVML_LIBRARY when set (the
// tests point it at a fake NVML, tests/nvml/fake_nvml.cpp; `none` loads nothing, for the
// fake-GPU tests on a machine with a driver). Loaded once per process, never
// unloaded; NVML itself is thread-safe, so the sampler thread calls it directly.
#pragma once

#include <cstdint>
#include <string>

namespace tb::nvml {

using Return = int;                         // nvmlReturn_t
using Device = struct nvmlDevice_st*;       // nvmlDevice_t, an opaque handle
inline constexpr Return kSuccess = 0;       // NVML_SUCCESS
inline constexpr Return kNotSupported = 3;  // NVML_ERROR_NOT_SUPPORTED

// nvmlClockType_t, nvmlTemperatureSensors_t, nvmlEnableState_t.
inline constexpr int kClockGraphics = 0, kClockSm = 1, kClockMem = 2;
inline constexpr int kTemperatureGpu = 0;
inline constexpr int kFeatureEnabled = 1;
// NVML_NVLINK_MAX_LINKS since driver R525 (Hopper has 18 links).
inline constexpr unsigned kMaxNvLinks = 18;
// nvmlIntNvLinkDeviceType_t: what a link's far end is (GPU, IBM NPU, NVSwitch).
inline constexpr int kNvLinkGpu = 0, kNvLinkSwitch = 2;

// nvmlPciInfo_t (the v3 layout NVML has kept since 2018): 16 + 5 x 4 + 32 bytes.
struct PciInfo {
  char bus_id_legacy[16];  // "0000:65:00.0" in the old short form
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];  // "00000000:65:00.0": NVML's 8-digit domain
};
static_assert(sizeof(PciInfo) == 68, "nvmlPciInfo_t is 68 bytes");

// nvmlGpuTopologyLevel_t: how far apart two GPUs are on the PCIe tree.
inline constexpr int kTopoInternal = 0, kTopoSingle = 10, kTopoMultiple = 20, kTopoHostBridge = 30,
                     kTopoNode = 40, kTopoSystem = 50;

// The loaded entry points. Required ones are never null once loaded; the others
// (newer or optional functions) are null where the library lacks them.
struct Api {
  // required
  Return (*init)();                                       // nvmlInit_v2
  const char* (*error_string)(Return);                    // nvmlErrorString
  Return (*device_count)(unsigned*);                      // nvmlDeviceGetCount_v2
  Return (*handle_by_index)(unsigned, Device*);           // nvmlDeviceGetHandleByIndex_v2
  Return (*handle_by_pci_bus_id)(const char*, Device*);  // nvmlDeviceGetHandleByPciBusId_v2
  // optional
  Return (*driver_version)(char*, unsigned);                   // nvmlSystemGetDriverVersion
  Return (*nvml_version)(char*, unsigned);                     // nvmlSystemGetNVMLVersion
  Return (*name)(Device, char*, unsigned);                     // nvmlDeviceGetName
  Return (*pci_info)(Device, PciInfo*);                        // nvmlDeviceGetPciInfo_v3
  Return (*max_clock)(Device, int, unsigned*);                 // nvmlDeviceGetMaxClockInfo (MHz)
  Return (*applications_clock)(Device, int, unsigned*);        // nvmlDeviceGetApplicationsClock (MHz)
  Return (*clock)(Device, int, unsigned*);                     // nvmlDeviceGetClockInfo (MHz, now)
  Return (*power_limit)(Device, unsigned*);                    // nvmlDeviceGetPowerManagementLimit (mW)
  Return (*enforced_power_limit)(Device, unsigned*);           // nvmlDeviceGetEnforcedPowerLimit (mW)
  Return (*ecc_mode)(Device, int*, int*);                      // nvmlDeviceGetEccMode (current, pending)
  Return (*max_pcie_gen)(Device, unsigned*);                   // nvmlDeviceGetMaxPcieLinkGeneration
  Return (*max_pcie_width)(Device, unsigned*);                 // nvmlDeviceGetMaxPcieLinkWidth
  Return (*pcie_gen)(Device, unsigned*);                       // nvmlDeviceGetCurrPcieLinkGeneration
  Return (*pcie_width)(Device, unsigned*);                     // nvmlDeviceGetCurrPcieLinkWidth
  Return (*common_ancestor)(Device, Device, int*);             // nvmlDeviceGetTopologyCommonAncestor
  Return (*nvlink_state)(Device, unsigned, int*);              // nvmlDeviceGetNvLinkState
  Return (*nvlink_remote_pci)(Device, unsigned, PciInfo*);     // nvmlDeviceGetNvLinkRemotePciInfo_v2
  Return (*nvlink_remote_type)(Device, unsigned, int*);        // nvmlDeviceGetNvLinkRemoteDeviceType (R460+)
  Return (*power_usage)(Device, unsigned*);                    // nvmlDeviceGetPowerUsage (mW)
  Return (*temperature)(Device, int, unsigned*);               // nvmlDeviceGetTemperature (°C)
  // nvmlDeviceGetCurrentClocksEventReasons (R535+), else the older
  // nvmlDeviceGetCurrentClocksThrottleReasons: the same bits.
  Return (*clocks_event_reasons)(Device, unsigned long long*);
  Return (*total_energy)(Device, unsigned long long*);  // nvmlDeviceGetTotalEnergyConsumption (mJ, Volta+)
};

// The library's name as dlopen is given it: TB_NVML_LIBRARY, else "libnvidia-ml.so.1".
std::string library_name();

// NVML loaded and initialised (nvmlInit_v2), or null; the first call loads it.
const Api* api();
// Why api() is null: "NVML not found: libnvidia-ml.so.1", "NVML unusable: ... lacks
// nvmlInit_v2", "NVML init failed: Driver Not Loaded", "NVML disabled: TB_NVML_LIBRARY=none".
// "" when it is loaded.
const std::string& unavailable_reason();

// nvmlErrorString of `r` ("" when NVML is not loaded).
std::string error(Return r);

// Throttle (clocks event) reason bits, nvmlClocksEventReason*.
inline constexpr uint64_t kReasonGpuIdle = 0x1, kReasonApplicationsClocks = 0x2, kReasonSwPowerCap = 0x4,
                          kReasonHwSlowdown = 0x8, kReasonSyncBoost = 0x10, kReasonSwThermal = 0x20,
                          kReasonHwThermal = 0x40, kReasonHwPowerBrake = 0x80, kReasonDisplayClocks = 0x100;
// "sw_power_cap|hw_thermal_slowdown" in bit order, unknown bits as "0x...", "none" for 0.
std::string reason_names(uint64_t bits);

}  // namespace tb::nvml
