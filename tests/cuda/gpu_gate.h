// tests/cuda/gpu_gate.h — the one place a GPU test decides to run, skip or fail
// (harness/gpu_readiness.h gpu_test_gate): where GPU 0 cannot run this build (no device,
// a driver older than the runtime, no driver, no kernel image for it) the test skips
// with the reason — but FAILS with it where this machine has an NVIDIA GPU (/dev/nvidia0,
// nvidia-smi) or TB_REQUIRE_GPU=1 asks for one, so a GPU box never passes by skipping.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "harness/gpu_readiness.h"
#include "harness/host_info.h"

namespace tb::test {

// Decided once per test binary: the probe makes GPU 0 current (its context).
inline const GpuTestGate& gpu_gate() {
  static const GpuTestGate gate = gpu_test_gate(gpu_unusable_reason(0), gpu_present_here(), gpu_required_by_env());
  return gate;
}

}  // namespace tb::test

// In a fixture's SetUp (or a test): returns from it, skipped or failed, unless GPU tests can run.
#define TB_GPU_TEST_GATE()                                                                   \
  do {                                                                                       \
    const ::tb::GpuTestGate& tb_gate_ = ::tb::test::gpu_gate();                              \
    if (tb_gate_.verdict == ::tb::GpuTestVerdict::kFail) FAIL() << "GPU test: " << tb_gate_.why; \
    if (tb_gate_.verdict == ::tb::GpuTestVerdict::kSkip) GTEST_SKIP() << "no usable GPU: " << tb_gate_.why; \
  } while (0)
