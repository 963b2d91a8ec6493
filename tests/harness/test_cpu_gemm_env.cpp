// tests/harness/test_cpu_gemm_env.cpp — env.json's `cpu_gemm` record (which GEMM
// micro-kernel and blocking ran, and the CPU properties behind the choice) and the
// TB_CPU_GEMM_KERNEL override: a supported value is used and recorded and trains to the
// same loss within float tolerance; a bad value is bad input (exit 2, nothing written).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/csv_writer.h"
#include "kernels/cpu/cpu_props.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear_step.h"
#include "tests/json_file.h"
#include "tests/shell.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tb::test::read_json_file;
using tb::test::tmp;

// An MLP, so the blocked GEMM (not only the skinny paths) runs.
const char* kMlp = "run --backend cpu-omp --threads 2 --model mlp --layers 40,48,3 --samples 600 --batch 64 "
                   "--epochs 2 --warmup 0 --reps 1";

// The first row's final_loss (csv_fields: the writer's own quoting rules).
double final_loss(const std::string& csv) {
  std::ifstream in(csv);
  std::string header, row;
  if (!std::getline(in, header) || !std::getline(in, row)) return NAN;
  const std::vector<std::string> h = tb::csv_fields(header), f = tb::csv_fields(row);
  for (size_t i = 0; i < h.size() && i < f.size(); ++i)
    if (h[i] == "final_loss") return std::stod(f[i]);
  return NAN;
}

TEST(CpuGemmEnv, EnvJsonRecordsTheKernelBlockingAndCpuProperties) {
  const std::string out = tmp("gemm-env.csv");
  const auto r = tb::test::shell("env -u TB_CPU_GEMM_KERNEL " + std::string(TB_TRAINBENCH_EXE) + " " + kMlp +
                                 " --no-ceilings --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const json g = read_json_file(out + ".env.json")["cpu_gemm"];
  const tb::cpu::GemmConfig& cfg = tb::cpu::gemm_config();  // this process: same machine, no override
  EXPECT_EQ(g["kernel"], cfg.kernel);
  // The rule (kernels/cpu/gemm.cpp, README): the widest kernel, as an 8 x 48 tile on an
  // Intel core with AVX-512.
  const tb::cpu::CpuProps& props = tb::cpu::cpu_props();
  EXPECT_EQ(g["kernel"], props.avx512 && props.vendor == "GenuineIntel" ? std::string("avx512-8x48")
                                                                      : tb::cpu::gemm_kernels_supported().front());
  EXPECT_EQ(g["micro_tile"], std::to_string(cfg.mr) + "x" + std::to_string(cfg.nr));
  EXPECT_EQ(g["kc"], cfg.kc);
  EXPECT_EQ(g["nc"], cfg.nc);
  EXPECT_FALSE(g["vector_unit"].get<std::string>().empty());
  EXPECT_NE(g["chosen_by"].get<std::string>().find("L1d"), std::string::npos) << g.dump(2);
  EXPECT_EQ(g["linear_step"], tb::cpu::linear_step_implementation());
  EXPECT_NE(g["linear_step"].get<std::string>().find("on the " + cfg.kernel + " "), std::string::npos) << g.dump(2);
  const tb::cpu::CpuProps& p = tb::cpu::cpu_props();
  EXPECT_EQ(g["cpu"]["l1d_bytes"], p.l1d_bytes);
  EXPECT_EQ(g["cpu"]["l2_bytes"], p.l2_bytes);
  EXPECT_EQ(g["cpu"]["avx512"], p.avx512);
  EXPECT_GT(g["cpu"]["l1d_bytes"].get<int64_t>(), 0);
}

TEST(CpuGemmEnv, OverrideIsUsedRecordedAndTrainsToTheSameLoss) {
  const std::string a = tmp("gemm-auto.csv"), b = tmp("gemm-portable.csv");
  auto r = tb::test::shell("env -u TB_CPU_GEMM_KERNEL " + std::string(TB_TRAINBENCH_EXE) + " " + kMlp +
                           " --no-ceilings --out " + a);
  ASSERT_EQ(r.code, 0) << r.out;
  r = tb::test::shell("TB_CPU_GEMM_KERNEL=portable " + std::string(TB_TRAINBENCH_EXE) + " " + kMlp +
                      " --no-ceilings --out " + b);
  ASSERT_EQ(r.code, 0) << r.out;
  const json g = read_json_file(b + ".env.json")["cpu_gemm"];
  EXPECT_EQ(g["kernel"], "portable");
  EXPECT_EQ(g["micro_tile"], "6x16");
  EXPECT_NE(g["chosen_by"].get<std::string>().find("TB_CPU_GEMM_KERNEL=portable"), std::string::npos);
  EXPECT_NE(g["linear_step"].get<std::string>().find("on the portable 6x16"), std::string::npos) << g.dump(2);
  // Different kernels round differently (tile, kc, FMA contraction): the same training
  // within float32 accumulation error, not bit for bit.
  const double la = final_loss(a), lb = final_loss(b);
  ASSERT_TRUE(std::isfinite(la) && std::isfinite(lb));
  EXPECT_NEAR(la, lb, 1e-4 * std::fabs(la)) << la << " vs " << lb;
}

TEST(CpuGemmEnv, BadOverrideIsBadInputAndWritesNothing) {
  const std::string out = tmp("gemm-bad.csv");
  auto r = tb::test::shell("TB_CPU_GEMM_KERNEL=amx " + std::string(TB_TRAINBENCH_EXE) + " " + kMlp + " --out " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("TB_CPU_GEMM_KERNEL=amx: allowed values on this CPU: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("portable"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".env.json"));
  const std::string dir = tmp("gemm-bad-suite");
  fs::create_directories(dir);
  {
    std::ofstream s(dir + "/s.suite");
    s << "tiny: --model linear --layers 8,1 --samples 200 --batch 50 --epochs 1 --warmup 0 --reps 1 "
         "--backends cpu-omp --threads 1\n";
  }
  r = tb::test::shell("TB_CPU_GEMM_KERNEL=fast " + std::string(TB_TRAINBENCH_EXE) + " suite " + dir + "/s.suite --out " +
                      dir + "/out");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/out/results.csv"));
}

}  // namespace
