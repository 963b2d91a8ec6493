// harness/gpu_readiness.h — why a GPU cannot be used, in words a user can act on, and
// whether a GPU test may skip. Pure decisions over facts gathered elsewhere (cuda_probe.cpp
// asks CUDA; gpu_present_here() asks the machine), so the CPU tests check every branch.
#pragma once

#include <string>

namespace tb {

// What CUDA and the machine said when no device could be counted.
struct DriverFacts {
  int driver_cuda = 0;   // cudaDriverGetVersion: the newest CUDA the driver supports (12040 = 12.4); 0 = no driver
  int runtime_cuda = 0;  // cudaRuntimeGetVersion: the runtime this build loaded (13000 = 13.0)
  bool libcuda_loads = false;  // dlopen("libcuda.so.1") succeeded
  std::string driver_release;  // the kernel module's version ("550.54.15", /proc/driver/nvidia/version), "" unknown
  std::string error;           // cudaGetDeviceCount's error text, "" when it succeeded
  int device_count = 0;
};

// "13.0" from 13000.
std::string cuda_version_text(int v);

// The oldest Linux driver branch whose libcuda runs a CUDA `major` runtime (CUDA's
// release notes, minor-version compatibility: 11.x 450, 12.x 525, 13.x 580); 0 unknown.
int min_driver_branch(int cuda_major);

// Why no CUDA device is usable, most specific first:
//   a driver older than the runtime: "driver 550.54.15 supports CUDA ≤ 12.4; this build
//     uses the CUDA 13.0 runtime: update the driver (CUDA 13 needs ≥ 580) or build with a
//     matching toolkit" ("the installed driver supports ..." where its release is unknown);
//   no driver at all (no version, libcuda.so.1 does not load): "no NVIDIA driver
//     (libcuda.so.1 not found)";
//   otherwise "no CUDA device (ERROR)" or "no CUDA device (0 devices)".
// "" when a device was counted.
std::string no_device_reason(const DriverFacts& f);

// The GPU tests' one decision (tests/cuda/gpu_gate.h): run where a GPU is usable; where
// none is, skip — unless this machine has a GPU (gpu_present) or the caller demands one
// (TB_REQUIRE_GPU=1): then fail with the reason, so a GPU box never passes by skipping.
enum class GpuTestVerdict { kRun, kSkip, kFail };
struct GpuTestGate {
  GpuTestVerdict verdict = GpuTestVerdict::kRun;
  std::string why;  // the reason to skip or fail, with what made it a failure
};
GpuTestGate gpu_test_gate(const std::string& unusable_reason, bool gpu_present, bool gpu_required);

// Whether this machine has an NVIDIA GPU whatever CUDA says: /dev/nvidia0 exists, or
// `nvidia-smi -L` lists a GPU. `dev_root` prefixes /dev (tests).
bool gpu_present_here(const std::string& dev_root = "");
// TB_REQUIRE_GPU=1 in the environment.
bool gpu_required_by_env();

}  // namespace tb
