// tests/cuda_emu/test_step_loss_kernels_emu.cpp — the device code of
// kernels/cuda/step_loss_kernels.cuh on the CPU under cuda_emu.h: at the launcher's
// geometry (one block of 32) one thread writes the sum into the slot the counter names
// and advances the counter, so replaying the same launch fills consecutive slots.
#include "tests/cuda_emu/cuda_emu.h"
// The kernel under test, after the emulation it compiles against.
#include "kernels/cuda/step_loss_kernels.cuh"

#include <gtest/gtest.h>

#include <vector>

namespace {

TEST(StepLossKernelsEmu, EachLaunchFillsTheNextSlotOnce) {
  std::vector<double> losses(5, -1.0);
  unsigned long long next = 0;
  double sum = 0;
  for (int replay = 0; replay < 4; ++replay) {
    sum = 1.5 + replay;  // what the step's loss kernel left in the scratch sum
    emu::launch(1, 32, tb::cuda::append_step_loss_kernel, static_cast<const double*>(&sum), losses.data(), &next);
  }
  EXPECT_EQ(next, 4u);
  EXPECT_EQ(losses, (std::vector<double>{1.5, 2.5, 3.5, 4.5, -1.0}));
}

}  // namespace
