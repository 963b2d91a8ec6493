// tests/harness/test_gpu_readiness.cpp — the words for an unusable GPU and the GPU tests'
// gate (harness/gpu_readiness.h), the architecture list in words (kernels/cuda_arch.h),
// and PCI bus ids through a double and into the gpu_bus_ids cell (harness/ddp_plan.h):
// pure functions, every branch from hand-made facts, no CUDA needed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "harness/ddp_plan.h"
#include "harness/gpu_readiness.h"
#include "kernels/cuda_arch.h"
#include "tests/shell.h"

namespace tb {
namespace {

DriverFacts facts(int driver, int runtime, bool libcuda, const std::string& error, int count = 0) {
  DriverFacts f;
  f.driver_cuda = driver;
  f.runtime_cuda = runtime;
  f.libcuda_loads = libcuda;
  f.error = error;
  f.device_count = count;
  return f;
}

const char* kInsufficient = "CUDA driver version is insufficient for CUDA runtime version";

TEST(NoDeviceReason, ADriverOlderThanTheRuntimeNamesBothAndWhatToDo) {
  DriverFacts f = facts(12040, 13000, true, kInsufficient);
  f.driver_release = "550.54.15";
  EXPECT_EQ(no_device_reason(f),
            "driver 550.54.15 supports CUDA ≤ 12.4; this build uses the CUDA 13.0 runtime: update the driver "
            "(CUDA 13 needs ≥ 580) or build with a matching toolkit");
  f.driver_release = "";  // /proc/driver/nvidia/version unreadable (a container)
  f.runtime_cuda = 12080;
  EXPECT_EQ(no_device_reason(f),
            "the installed driver supports CUDA ≤ 12.4; this build uses the CUDA 12.8 runtime: update the driver "
            "(CUDA 12 needs ≥ 525) or build with a matching toolkit");
  f.runtime_cuda = 14000;  // a major with no known branch: no number made up
  EXPECT_EQ(no_device_reason(f),
            "the installed driver supports CUDA ≤ 12.4; this build uses the CUDA 14.0 runtime: update the driver "
            "or build with a matching toolkit");
}

TEST(NoDeviceReason, NoDriverAtAllSaysSoInsteadOfCudasGenericError) {
  EXPECT_EQ(no_device_reason(facts(0, 13000, false, kInsufficient)), "no NVIDIA driver (libcuda.so.1 not found)");
  // libcuda loads but reports nothing: CUDA's own words.
  EXPECT_EQ(no_device_reason(facts(0, 13000, true, kInsufficient)),
            std::string("no CUDA device (") + kInsufficient + ")");
}

TEST(NoDeviceReason, OtherwiseCudasErrorOrNoDevices) {
  EXPECT_EQ(no_device_reason(facts(13000, 13000, true, "no CUDA-capable device is detected")),
            "no CUDA device (no CUDA-capable device is detected)");
  EXPECT_EQ(no_device_reason(facts(13000, 13000, true, "")), "no CUDA device (0 devices)");
  // A newer driver than the runtime is fine: its error is CUDA's.
  EXPECT_EQ(no_device_reason(facts(13010, 13000, true, "out of memory")), "no CUDA device (out of memory)");
  EXPECT_EQ(no_device_reason(facts(13000, 13000, true, "", 2)), "");
}

TEST(NoDeviceReason, VersionsAndDriverBranches) {
  EXPECT_EQ(cuda_version_text(12040), "12.4");
  EXPECT_EQ(cuda_version_text(13000), "13.0");
  EXPECT_EQ(cuda_version_text(12080), "12.8");
  EXPECT_EQ(min_driver_branch(11), 450);
  EXPECT_EQ(min_driver_branch(12), 525);
  EXPECT_EQ(min_driver_branch(13), 580);
  EXPECT_EQ(min_driver_branch(10), 0);
}

// The whole decision table: usable x present x required.
TEST(GpuTestGate, RunsWhereUsableSkipsOnlyWhereNoGpuIsPresentOrRequired) {
  for (bool present : {false, true}) {
    for (bool required : {false, true}) {
      SCOPED_TRACE(std::string("present ") + (present ? "yes" : "no") + ", required " + (required ? "yes" : "no"));
      const GpuTestGate run = gpu_test_gate("", present, required);
      EXPECT_EQ(run.verdict, GpuTestVerdict::kRun);
      EXPECT_EQ(run.why, "");
      const GpuTestGate no = gpu_test_gate("no NVIDIA driver (libcuda.so.1 not found)", present, required);
      EXPECT_EQ(no.verdict, present || required ? GpuTestVerdict::kFail : GpuTestVerdict::kSkip);
      EXPECT_EQ(no.why.rfind("no NVIDIA driver (libcuda.so.1 not found)", 0), 0u) << no.why;
    }
  }
  EXPECT_NE(gpu_test_gate("x", false, true).why.find("TB_REQUIRE_GPU=1"), std::string::npos);
  EXPECT_NE(gpu_test_gate("x", true, false).why.find("this machine has an NVIDIA GPU"), std::string::npos);
}

TEST(GpuTestGate, PresenceIsTheDeviceNodeUnderAGivenRoot) {
  const std::filesystem::path root = test::tmp("gpu-present");
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "dev");
  EXPECT_FALSE(gpu_present_here(root.string()));
  std::ofstream(root / "dev" / "nvidia0") << "";
  EXPECT_TRUE(gpu_present_here(root.string()));
}

TEST(GpuTestGate, RequiredOnlyByExactlyOne) {
  const char* old = std::getenv("TB_REQUIRE_GPU");
  const std::string saved = old ? old : "";
  const std::vector<std::pair<const char*, bool>> cases = {{"1", true}, {"0", false}, {"", false}, {"yes", false}};
  for (const auto& [value, want] : cases) {
    ::setenv("TB_REQUIRE_GPU", value, 1);
    EXPECT_EQ(gpu_required_by_env(), want) << "'" << value << "'";
  }
  ::unsetenv("TB_REQUIRE_GPU");
  EXPECT_FALSE(gpu_required_by_env());
  if (old) ::setenv("TB_REQUIRE_GPU", saved.c_str(), 1);
}

TEST(CudaArch, ListInWordsAndTheNoImageMessage) {
  EXPECT_EQ(describe_cuda_archs("75-real,80-real,90"), "sm_75, sm_80, sm_90 + PTX compute_90");
  EXPECT_EQ(describe_cuda_archs("80-virtual"), "PTX compute_80");
  EXPECT_EQ(describe_cuda_archs("native"), "native");
  EXPECT_EQ(describe_cuda_archs(""), "no architectures");
  EXPECT_EQ(no_kernel_image_message(7, 0, "80-real,90"),
            "this build has no kernel image for sm_70 (built for sm_80, sm_90 + PTX compute_90): rebuild with "
            "CMAKE_CUDA_ARCHITECTURES=70");
  EXPECT_EQ(no_kernel_image_message(8, 6, "80"),
            "this build has no kernel image for sm_86 (built for sm_80 + PTX compute_80): rebuild with "
            "CMAKE_CUDA_ARCHITECTURES=86");
}

TEST(PciBusIds, ThroughADoubleAndBack) {
  for (const char* id : {"0000:3b:00.0", "0000:00:1e.0", "0001:c1:1f.7", "ffff:ff:00.3"}) {
    const double k = pci_bus_key(id);
    ASSERT_GE(k, 0) << id;
    EXPECT_EQ(pci_bus_text(k), id);
  }
  EXPECT_EQ(pci_bus_normal("0000:3B:00.0"), "0000:3b:00.0");   // CUDA may write upper case
  EXPECT_EQ(pci_bus_normal("00000000:3B:00.0"), "0000:3b:00.0");  // nvidia-smi's 8-digit domain
  EXPECT_NE(pci_bus_key("0000:3b:00.0"), pci_bus_key("0000:3b:00.1"));
  EXPECT_NE(pci_bus_key("0001:3b:00.0"), pci_bus_key("0000:3b:00.0"));
  for (const char* bad : {"", "?", "3b:00.0", "0000:3b:00", "0000:3b:00.0x", "0000:100:00.0", "0000:3b:20.0"}) {
    EXPECT_LT(pci_bus_key(bad), 0) << "'" << bad << "'";
    EXPECT_EQ(pci_bus_normal(bad), bad);
  }
  EXPECT_EQ(pci_bus_text(-1), "?");
}

TEST(PciBusIds, RankCellNamesNodesOnlyWhenTheJobSpansThem) {
  EXPECT_EQ(rank_bus_ids({"0000:3b:00.0"}, {7}), "0000:3b:00.0");
  EXPECT_EQ(rank_bus_ids({"0000:3b:00.0", "0000:5e:00.0"}, {7, 7}), "0000:3b:00.0,0000:5e:00.0");
  // Two nodes' GPUs at the same bus id are two GPUs: the node number keeps them apart.
  EXPECT_EQ(rank_bus_ids({"0000:3b:00.0", "0000:3b:00.0"}, {9, 4}), "0/0000:3b:00.0,1/0000:3b:00.0");
  EXPECT_EQ(rank_bus_ids({"a", "b", "c"}, {5, 6, 5}), "0/a,1/b,0/c");
}

}  // namespace
}  // namespace tb
