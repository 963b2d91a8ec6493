// tests/harness/test_devices.cpp — format_devices (harness/devices.cpp), the text of
// `trainbench devices`, on hand-made inventories: two GPUs with every field distinct
// (so a field printed in the wrong place or not at all shows) and a one-way peer
// matrix (so rows and columns cannot be swapped unnoticed); and no usable GPU, where
// the GPU part is the reason in one line.
#include <gtest/gtest.h>

#include <string>

#include "harness/host_info.h"

namespace tb {
namespace {

HostInfo host() {
  HostInfo h;
  h.hostname = "box";
  h.os = "Debian 12";
  h.kernel = "Linux 6.1 x86_64";
  h.cpu_model = "Xeon";
  h.logical_cores = 16;
  h.memory_bytes = int64_t{64} << 30;
  return h;
}

const char* kHost =
    "host     box (Debian 12, Linux 6.1 x86_64)\n"
    "cpu      Xeon, 16 logical cores\n"
    "memory   65536 MiB\n";

GpuInventory two_gpus() {
  GpuInventory g;
  g.usable = true;
  g.driver_version = "13.1";
  g.runtime_version = "13.0";
  g.cublas_version = "13.1.0";
  g.nccl_version = "2.28.9";
  g.gpus = {GpuInfo{.index = 0, .name = "NVIDIA H100 80GB HBM3", .pci_bus_id = "0000:19:00.0",
                    .compute_capability = "9.0", .sm_count = 132, .memory_total_bytes = int64_t{81559} << 20,
                    .memory_free_bytes = int64_t{80000} << 20, .clock_mhz = 1980, .memory_clock_mhz = 2619},
            GpuInfo{.index = 1, .name = "NVIDIA A100-SXM4-40GB", .pci_bus_id = "0000:3B:00.0",
                    .compute_capability = "8.0", .sm_count = 108, .memory_total_bytes = int64_t{40536} << 20,
                    .memory_free_bytes = -1,  // not read
                    .clock_mhz = 1410, .memory_clock_mhz = 1215}};
  g.peer_access = {{1, 1}, {0, 1}};  // 0 can access 1; 1 cannot access 0
  return g;
}

TEST(FormatDevices, TwoGpusEveryFieldAndThePeerMatrix) {
  const std::string want = std::string(kHost) +
      "driver   13.1, runtime 13.0, cuBLAS 13.1.0, NCCL 2.28.9\n"
      "gpu 0    NVIDIA H100 80GB HBM3, cc 9.0, 132 SMs, 81559 MiB total, 80000 MiB free, 1980 MHz, mem 2619 MHz, "
      "pci 0000:19:00.0\n"
      "gpu 1    NVIDIA A100-SXM4-40GB, cc 8.0, 108 SMs, 40536 MiB total, ? MiB free, 1410 MHz, mem 1215 MHz, "
      "pci 0000:3B:00.0\n"
      "peer access (row can access column):\n"
      "      0 1\n"
      "  0   Y Y\n"
      "  1   . Y\n";
  EXPECT_EQ(format_devices(host(), two_gpus()), want);
}

TEST(FormatDevices, SaysWhenBuiltWithoutNccl) {
  GpuInventory g = two_gpus();
  g.nccl_version.clear();
  EXPECT_NE(format_devices(host(), g).find("driver   13.1, runtime 13.0, cuBLAS 13.1.0, NCCL none (built without NCCL)\n"),
            std::string::npos);
}

TEST(FormatDevices, NoUsableGpuIsTheReasonInOneLine) {
  GpuInventory g;
  g.reason = "no CUDA device (CUDA driver version is insufficient for CUDA runtime version)";
  g.runtime_version = "13.0";
  g.driver_version = "none";
  const std::string want = std::string(kHost) +
      "gpus     none usable: no CUDA device (CUDA driver version is insufficient for CUDA runtime version)\n";
  EXPECT_EQ(format_devices(host(), g), want);
}

// The inventory of this build on this machine, whatever it is: usable with GPUs and a
// square peer matrix, or not usable with a one-line reason; never free memory read.
TEST(GpuInventory, NotReadLeavesFreeMemoryUnreadAndIsConsistent) {
  const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
  if (!g.usable) {
    EXPECT_FALSE(g.reason.empty());
    EXPECT_EQ(g.reason.find('\n'), std::string::npos) << g.reason;
    EXPECT_TRUE(g.gpus.empty());
    return;
  }
  ASSERT_FALSE(g.gpus.empty());
  ASSERT_EQ(g.peer_access.size(), g.gpus.size());
  for (size_t i = 0; i < g.gpus.size(); ++i) {
    EXPECT_EQ(g.gpus[i].memory_free_bytes, -1) << "GPU " << i;
    ASSERT_EQ(g.peer_access[i].size(), g.gpus.size());
    EXPECT_EQ(g.peer_access[i][i], 1);
  }
}

}  // namespace
}  // namespace tb
