// tests/kernels/test_gemm_cpu_config.cpp — how tb::cpu::gemm configures itself: the
// blocking rule that sizes kc and nc from the cache sizes, the automatic kernel choice
// and its override (kernels/cpu/gemm.h). Each kernel's results are checked against
// the naive loop in test_gemm_cpu.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_props.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear_step.h"

namespace tb::cpu {
namespace {

// kc: the A micro-panel (mr x kc floats) fills half of L1d, in 16s, within [128, 1024];
// nc: the B slice (kc x nc) fills L2, in nr multiples, within [4 nr, 4096].
TEST(GemmCpuBlocking, FromCacheSizes) {
  int64_t kc = 0, nc = 0;
  gemm_blocking(48 << 10, 1 << 20, 12, 32, &kc, &nc);  // Zen 5: 48 KiB L1d, 1 MiB L2
  EXPECT_EQ(kc, 512);                                 // 24 KiB / 48 B
  EXPECT_EQ(nc, 512);                                 // 1 MiB / 2 KiB
  gemm_blocking(32 << 10, 1 << 20, 12, 32, &kc, &nc);  // Zen 4: 32 KiB L1d, 1 MiB L2
  EXPECT_EQ(kc, 336);                                 // 16 KiB / 48 B = 341, in 16s
  EXPECT_EQ(nc, 768);                                 // 1 MiB / 1344 B = 780, in 32s
  gemm_blocking(48 << 10, 2 << 20, 12, 32, &kc, &nc);  // Sapphire Rapids: 48 KiB, 2 MiB
  EXPECT_EQ(kc, 512);
  EXPECT_EQ(nc, 1024);
  gemm_blocking(48 << 10, 1280 << 10, 8, 48, &kc, &nc);  // Ice Lake-SP, the 8 x 48 tile
  EXPECT_EQ(kc, 768);                                  // 24 KiB / 32 B
  EXPECT_EQ(nc, 384);                                  // 1.25 MiB / 3 KiB = 426, in 48s
  gemm_blocking(32 << 10, 256 << 10, 6, 16, &kc, &nc);  // an AVX2 client core
  EXPECT_EQ(kc, 672);                                  // 16 KiB / 24 B = 682, in 16s
  EXPECT_EQ(nc, 96);                                   // 256 KiB / 2688 B = 97, in 16s
  gemm_blocking(0, 0, 12, 32, &kc, &nc);                // unknown caches: 32 KiB / 1 MiB
  EXPECT_EQ(kc, 336);
  EXPECT_EQ(nc, 768);
  gemm_blocking(4 << 10, 16 << 10, 12, 32, &kc, &nc);   // tiny caches: the lower bounds
  EXPECT_EQ(kc, 128);
  EXPECT_EQ(nc, 128);
  gemm_blocking(1 << 20, 64 << 20, 6, 16, &kc, &nc);    // huge caches: the upper bounds
  EXPECT_EQ(kc, 1024);
  EXPECT_EQ(nc, 4096);
}

TEST(GemmCpuKernels, ChoiceIsRecordedAndOverridable) {
  const std::vector<std::string> ok = gemm_kernels_supported();
  ASSERT_FALSE(ok.empty());
  EXPECT_EQ(ok.back(), "portable");
  // The automatic choice: the widest supported kernel, as its 8 x 48 tile on an Intel
  // core with AVX-512.
  const CpuProps& p = cpu_props();
  const std::string automatic = p.avx512 && p.vendor == "GenuineIntel" ? "avx512-8x48" : ok.front();
  const GemmConfig& g = gemm_config();
  EXPECT_EQ(g.kernel, automatic);
  EXPECT_GE(g.kc, 128);
  EXPECT_LE(g.kc, 1024);
  EXPECT_EQ(g.nc % g.nr, 0);
  EXPECT_NE(gemm_implementation().find(g.kernel), std::string::npos);
  set_gemm_kernel("portable");
  EXPECT_EQ(gemm_config().kernel, "portable");
  EXPECT_EQ(gemm_config().mr, 6);
  EXPECT_NE(gemm_config().chosen_by.find("set_gemm_kernel"), std::string::npos);
  EXPECT_THROW(set_gemm_kernel("amx"), std::invalid_argument);
  if (p.avx512) {
    set_gemm_kernel("avx512-8x48");
    EXPECT_EQ(gemm_config().mr, 8);
    EXPECT_EQ(gemm_config().nr, 48);
    set_gemm_kernel("avx512");
    EXPECT_EQ(gemm_config().mr, 12);
    EXPECT_EQ(gemm_config().nr, 32);
  }
  set_gemm_kernel("");
  EXPECT_EQ(gemm_config().kernel, automatic);
}

// Every kernel gives correct results (test_gemm_cpu.cpp), so a name dispatched to the
// wrong kernel would pass those tests while env.json named a kernel that never ran.
// Here each name must run the kernel it names, in gemm() and in the blocked linear
// step, and record that kernel's own tile.
TEST(GemmCpuKernels, EachNameRunsTheKernelItNames) {
  struct Tile {
    const char* name;
    int64_t mr, nr;
  };
  const std::vector<Tile> tiles = {{"avx512", 12, 32}, {"avx512-8x48", 8, 48}, {"avx2", 6, 16}, {"portable", 6, 16}};
  const std::vector<std::string> ok = gemm_kernels_supported();
  std::vector<float> a(40 * 40, 0.5f), b(40 * 40, 0.25f), c(40 * 40, 0.0f);
  std::vector<float> x(100 * 30, 0.1f), t(100 * 50, 0.2f), w(50 * 30, 0.3f), bias(50, 0.0f), dw(50 * 30), db(50);
  int checked = 0;
  for (const Tile& tile : tiles) {
    if (std::find(ok.begin(), ok.end(), tile.name) == ok.end()) continue;
    SCOPED_TRACE(tile.name);
    set_gemm_kernel(tile.name);
    EXPECT_EQ(gemm_config().mr, tile.mr);
    EXPECT_EQ(gemm_config().nr, tile.nr);
    gemm(false, true, 40, 40, 40, 1.0f, a.data(), 40, b.data(), 40, 0.0f, c.data(), 40);
    ASSERT_NE(gemm_kernel_last_run(), nullptr);
    EXPECT_EQ(std::string(gemm_kernel_last_run()), tile.name);
    EXPECT_FLOAT_EQ(c[0], 40 * 0.5f * 0.25f);
    set_gemm_kernel(tile.name == std::string("portable") ? ok.front() : "portable");  // a different last run
    gemm(false, false, 40, 40, 40, 1.0f, a.data(), 40, b.data(), 40, 0.0f, c.data(), 40);
    set_gemm_kernel(tile.name);
    linear_mse_step_blocked(x.data(), t.data(), 100, 30, 50, w.data(), bias.data(), 1.0f / 5000, dw.data(),
                            db.data());
    EXPECT_EQ(std::string(gemm_kernel_last_run()), tile.name);
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(ok.size())) << "a supported kernel is missing from this test's table";
  set_gemm_kernel("");
}

}  // namespace
}  // namespace tb::cpu
