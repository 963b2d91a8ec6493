// tests/nvml/test_gpu_telemetry_summary.cpp — the pure parts of the NVML telemetry
// (harness/gpu_telemetry.h, nvml_env.h, nvml.h): a repetition's figures from scripted
// per-GPU sample series against a naive computation written here, the throttle reason
// names, and the link matrix cells.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "harness/gpu_telemetry.h"
#include "harness/nvml_env.h"

namespace {

using tb::TelemetrySample;

std::vector<TelemetrySample> series(std::mt19937& rng, int n) {
  std::uniform_int_distribution<int> mhz(300, 1980), mw(50000, 700000), temp(30, 90), bit(0, 8);
  std::vector<TelemetrySample> s;
  for (int k = 0; k < n; ++k) {
    TelemetrySample x;
    x.sm_mhz = mhz(rng);
    x.power_w = mw(rng) / 1000.0;
    x.temp_c = temp(rng);
    x.reasons = k % 3 == 0 ? uint64_t{1} << bit(rng) : 0;
    x.reasons_ok = true;
    s.push_back(x);
  }
  return s;
}

double naive_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Odd and even sample counts, one to three GPUs of different lengths.
TEST(GpuTelemetrySummary, MatchesANaiveComputationOverScriptedSeries) {
  std::mt19937 rng(7);
  for (const std::vector<int>& lengths : std::vector<std::vector<int>>{{1}, {2}, {9}, {10, 7}, {5, 12, 8}}) {
    std::vector<std::vector<TelemetrySample>> gpus;
    std::vector<double> energy;
    for (size_t g = 0; g < lengths.size(); ++g) {
      gpus.push_back(series(rng, lengths[g]));
      energy.push_back(12.5 * static_cast<double>(g + 1));
    }
    const tb::GpuTelemetrySummary s = tb::summarize_telemetry(gpus, energy);
    double min_clock = 1e9, min_median = 1e9, power_sum = 0, power_max = 0, temp_max = 0, energy_sum = 0;
    int64_t fewest = 1 << 30;
    uint64_t bits = 0;
    for (size_t g = 0; g < gpus.size(); ++g) {
      std::vector<double> clocks;
      double psum = 0;
      for (const TelemetrySample& x : gpus[g]) {
        clocks.push_back(x.sm_mhz);
        min_clock = std::min(min_clock, x.sm_mhz);
        psum += x.power_w;
        power_max = std::max(power_max, x.power_w);
        temp_max = std::max(temp_max, x.temp_c);
        bits |= x.reasons;
      }
      min_median = std::min(min_median, naive_median(clocks));
      power_sum += psum / static_cast<double>(gpus[g].size());
      fewest = std::min<int64_t>(fewest, static_cast<int64_t>(gpus[g].size()));
      energy_sum += energy[g];
    }
    SCOPED_TRACE("GPUs: " + std::to_string(lengths.size()) + ", first length " + std::to_string(lengths[0]));
    EXPECT_EQ(s.samples, fewest);
    EXPECT_DOUBLE_EQ(s.sm_clock_min_mhz, min_clock);
    EXPECT_DOUBLE_EQ(s.sm_clock_median_mhz, min_median);
    EXPECT_NEAR(s.power_mean_w, power_sum, 1e-9 * power_sum);
    EXPECT_DOUBLE_EQ(s.power_max_w, power_max);
    EXPECT_DOUBLE_EQ(s.temp_max_c, temp_max);
    EXPECT_EQ(s.throttle_bits, static_cast<int64_t>(bits));
    EXPECT_DOUBLE_EQ(s.energy_j, energy_sum);
  }
}

TEST(GpuTelemetrySummary, AGpuWithoutAnEnergyCounterEmptiesTheSum) {
  std::mt19937 rng(1);
  const tb::GpuTelemetrySummary s = tb::summarize_telemetry({series(rng, 3), series(rng, 3)}, {4.0, -1.0});
  EXPECT_LT(s.energy_j, 0);
  EXPECT_GT(s.sm_clock_min_mhz, 0);  // the samples still count
}

TEST(GpuTelemetrySummary, NoSamplesAndUnreadableFieldsStayEmpty) {
  const tb::GpuTelemetrySummary none = tb::summarize_telemetry({}, {});
  EXPECT_EQ(none.samples, -1);
  EXPECT_LT(none.energy_j, 0);
  EXPECT_LT(none.throttle_bits, 0);
  TelemetrySample blank;  // every getter failed
  const tb::GpuTelemetrySummary s = tb::summarize_telemetry({{blank, blank}}, {3.0});
  EXPECT_EQ(s.samples, 2);
  EXPECT_LT(s.sm_clock_min_mhz, 0);
  EXPECT_LT(s.sm_clock_median_mhz, 0);
  EXPECT_LT(s.power_mean_w, 0);
  EXPECT_LT(s.power_max_w, 0);
  EXPECT_LT(s.temp_max_c, 0);
  EXPECT_LT(s.throttle_bits, 0);
  EXPECT_DOUBLE_EQ(s.energy_j, 3.0);
}

TEST(GpuTelemetrySummary, ReasonsRead) {
  TelemetrySample quiet;
  quiet.reasons_ok = true;  // read, nothing set: "none", not empty
  const tb::GpuTelemetrySummary s = tb::summarize_telemetry({{quiet}}, {});
  EXPECT_EQ(s.throttle_bits, 0);
  EXPECT_EQ(tb::nvml::reason_names(0), "none");
  EXPECT_EQ(tb::nvml::reason_names(tb::nvml::kReasonSwPowerCap | tb::nvml::kReasonHwThermal),
            "sw_power_cap|hw_thermal_slowdown");
  EXPECT_EQ(tb::nvml::reason_names(0x1000 | tb::nvml::kReasonGpuIdle), "gpu_idle|0x1000");
}

TEST(NvmlTopology, CellsAsNvidiaSmiShowsThem) {
  EXPECT_EQ(tb::topology_cell(true, 0, -1), "X");
  EXPECT_EQ(tb::topology_cell(false, 4, tb::nvml::kTopoSystem), "NV4");  // NVLink wins over the PCIe path
  EXPECT_EQ(tb::topology_cell(false, 0, tb::nvml::kTopoSingle), "PIX");
  EXPECT_EQ(tb::topology_cell(false, 0, tb::nvml::kTopoMultiple), "PXB");
  EXPECT_EQ(tb::topology_cell(false, 0, tb::nvml::kTopoHostBridge), "PHB");
  EXPECT_EQ(tb::topology_cell(false, 0, tb::nvml::kTopoNode), "NODE");
  EXPECT_EQ(tb::topology_cell(false, 0, tb::nvml::kTopoSystem), "SYS");
  EXPECT_EQ(tb::topology_cell(false, 0, -1), "?");
}

}  // namespace
