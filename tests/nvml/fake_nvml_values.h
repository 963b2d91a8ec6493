// tests/nvml/fake_nvml_values.h — the fixed answers of the fake NVML (fake_nvml.cpp),
// shared with the tests that check env.json against them (test_nvml_fake_run.cpp).
#pragma once

namespace tb::fake_nvml {

inline constexpr const char* kDriverVersion = "999.12.34";
inline constexpr const char* kNvmlVersion = "13.999.12.34";
inline constexpr const char* kName = "Fake NVML GPU";
inline constexpr unsigned kMaxSmMhz = 1980, kMaxGraphicsMhz = 1985, kMaxMemMhz = 2619;
inline constexpr unsigned kAppGraphicsMhz = 1755, kAppMemMhz = 2601;
inline constexpr unsigned kPowerLimitMw = 700000, kEnforcedPowerLimitMw = 650500;
inline constexpr int kEccCurrent = 1, kEccPending = 0;  // enabled now, disabled after reboot
inline constexpr unsigned kMaxPcieGen = 5, kMaxPcieWidth = 16, kPcieGen = 4, kPcieWidth = 8;
// The energy counter starts above 2^32 mJ (a 64-bit counter, ~50 days at 1 kW).
inline constexpr unsigned long long kEnergyStartMj = 5000000000000ULL;

}  // namespace tb::fake_nvml
