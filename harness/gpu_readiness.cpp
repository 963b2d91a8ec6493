// harness/gpu_readiness.cpp — the reasons a GPU cannot be used and the GPU tests' gate
// (gpu_readiness.h). No CUDA here: the facts come in as arguments.
#include "harness/gpu_readiness.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace tb {

std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

int min_driver_branch(int cuda_major) {
  switch (cuda_major) {
    case 11: return 450;
    case 12: return 525;
    case 13: return 580;
    default: return 0;
  }
}

std::string no_device_reason(const DriverFacts& f) {
  if (f.error.empty() && f.device_count > 0) return "";
  // A driver that answers with a version is installed; it is too old for this runtime.
  if (f.driver_cuda > 0 && f.driver_cuda < f.runtime_cuda) {
    const int major = f.runtime_cuda / 1000;
    const int branch = min_driver_branch(major);
    std::string s = (f.driver_release.empty() ? std::string("the installed driver") : "driver " + f.driver_release) +
                    " supports CUDA ≤ " + cuda_version_text(f.driver_cuda) + "; this build uses the CUDA " +
                    cuda_version_text(f.runtime_cuda) + " runtime: update the driver";
    if (branch) s += " (CUDA " + std::to_string(major) + " needs ≥ " + std::to_string(branch) + ")";
    return s + " or build with a matching toolkit";
  }
  if (f.driver_cuda == 0 && !f.libcuda_loads) return "no NVIDIA driver (libcuda.so.1 not found)";
  return "no CUDA device (" + (f.error.empty() ? std::string("0 devices") : f.error) + ")";
}

GpuTestGate gpu_test_gate(const std::string& unusable_reason, bool gpu_present, bool gpu_required) {
  if (unusable_reason.empty()) return {GpuTestVerdict::kRun, ""};
  if (gpu_required) return {GpuTestVerdict::kFail, unusable_reason + " (TB_REQUIRE_GPU=1: a GPU test may not skip)"};
  if (gpu_present) {
    return {GpuTestVerdict::kFail, unusable_reason + " (this machine has an NVIDIA GPU: a GPU test may not skip)"};
  }
  return {GpuTestVerdict::kSkip, unusable_reason};
}

bool gpu_present_here(const std::string& dev_root) {
  std::error_code ec;
  if (std::filesystem::exists(dev_root + "/dev/nvidia0", ec)) return true;
  if (!dev_root.empty()) return false;  // a test's fake /dev: nvidia-smi would see the real machine
  FILE* p = ::popen("nvidia-smi -L 2>/dev/null", "r");
  if (!p) return false;
  char line[256];
  bool listed = false;
  while (std::fgets(line, sizeof line, p)) listed = listed || std::string(line).rfind("GPU ", 0) == 0;
  ::pclose(p);
  return listed;
}

bool gpu_required_by_env() {
  const char* e = std::getenv("TB_REQUIRE_GPU");
  return e && std::string(e) == "1";
}

}  // namespace tb
