// tests/harness/test_ceilings.cpp — the measured ceilings in env.json (harness/ceilings.h):
// present with units, method and duration when measured (TB_CEILINGS=1), positive and
// finite; omitted with the reason under --no-ceilings, TB_CEILINGS=0 and for `suite
// --no-ceilings`; a bad TB_CEILINGS value is bad input (exit 2, nothing written). No
// bound on the rates themselves: on a shared machine any value is possible, and the
// loops' arithmetic is tested in tests/kernels/test_ceiling_loops_cpu.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/ceilings.h"
#include "harness/cli.h"
#include "kernels/cpu/ceiling_loops.h"
#include "tests/json_file.h"
#include "tests/shell.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tb::test::read_json_file;
using tb::test::tmp;

const char* kTiny = "run --backend cpu-omp --threads 1 --model linear --layers 8,1 --samples 200 --batch 50 "
                    "--epochs 1 --warmup 0 --reps 1";

bool positive_finite(const json& v) { return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0; }

TEST(Ceilings, MeasuredOnesArePositiveFiniteAndCarryUnitsMethodAndDuration) {
  const std::string out = tmp("ceil-on.csv");
  const auto r = tb::test::shell("TB_CEILINGS=1 " + std::string(TB_TRAINBENCH_EXE) + " " + kTiny + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const json env = read_json_file(out + ".env.json");
  ASSERT_TRUE(env.contains("ceilings")) << env.dump(2);
  const json& c = env["ceilings"];
  EXPECT_FALSE(c.contains("omitted"));
  EXPECT_EQ(c["host"], env["host"]["hostname"]);
  const json& cpu = c["cpu"];
  for (const char* k : {"fma_gflops_1core", "fma_gflops_all", "triad_gbs_1core", "triad_gbs"}) {
    EXPECT_TRUE(positive_finite(cpu[k])) << k << ": " << cpu[k];
    ASSERT_TRUE(c["units"].contains(k)) << k;
    EXPECT_NE(c["units"][k].get<std::string>().find("/s"), std::string::npos) << k;
  }
  EXPECT_EQ(c["units"]["fma_gflops_all"], "GFLOP/s (1e9 FLOP/s)");
  EXPECT_EQ(c["units"]["triad_gbs"], "GB/s (1e9 B/s)");
  EXPECT_GE(cpu["threads"].get<int>(), 1);
  EXPECT_GE(cpu["triad_array_bytes"].get<int64_t>(), int64_t{16} << 20);
  EXPECT_EQ(cpu["isa"], tb::cpu::fma_loop_isa());
  EXPECT_FALSE(cpu["method"].get<std::string>().empty());
  EXPECT_TRUE(positive_finite(cpu["duration_s"]));
  // GPUs: measured per device, or none with the reason (no GPU here, or not a CUDA build).
  ASSERT_TRUE(c["gpus"].is_array());
  if (c["gpus"].empty()) {
    ASSERT_TRUE(c["gpu_reason"].is_string());
    EXPECT_FALSE(c["gpu_reason"].get<std::string>().empty());
  }
  for (const json& g : c["gpus"]) {
    if (g.contains("unavailable")) continue;
    for (const char* k : {"sgemm_gflops", "tf32_gflops", "d2d_gbs"}) EXPECT_TRUE(positive_finite(g[k])) << k;
  }
}

TEST(Ceilings, NoCeilingsFlagAndTbCeilings0OmitThemWithTheReason) {
  const std::string a = tmp("ceil-flag.csv"), b = tmp("ceil-env.csv");
  auto r = tb::test::shell("TB_CEILINGS=1 " + std::string(TB_TRAINBENCH_EXE) + " " + kTiny + " --no-ceilings --out " + a);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_json_file(a + ".env.json")["ceilings"], json({{"omitted", "--no-ceilings"}}));
  r = tb::test::shell("TB_CEILINGS=0 " + std::string(TB_TRAINBENCH_EXE) + " " + kTiny + " --out " + b);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_json_file(b + ".env.json")["ceilings"], json({{"omitted", "TB_CEILINGS=0"}}));
}

TEST(Ceilings, SuiteNoCeilingsOmitsThemAndTheFlagIsRefusedInASuiteLine) {
  const std::string dir = tmp("ceil-suite");
  fs::create_directories(dir);
  {
    std::ofstream s(dir + "/s.suite");
    s << "tiny: --model linear --layers 8,1 --samples 200 --batch 50 --epochs 1 --warmup 0 --reps 1 "
         "--backends cpu-omp --threads 1\n";
    std::ofstream bad(dir + "/bad.suite");
    bad << "tiny: --model linear --layers 8,1 --samples 200 --batch 50 --no-ceilings --backends cpu-omp\n";
  }
  auto r = tb::test::shell("TB_CEILINGS=1 " + std::string(TB_TRAINBENCH_EXE) + " suite " + dir + "/s.suite --out " +
                           dir + "/out --no-ceilings");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_json_file(dir + "/out/env.json")["ceilings"], json({{"omitted", "--no-ceilings"}}));
  r = tb::test::trainbench("suite " + dir + "/bad.suite --out " + dir + "/out2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--no-ceilings"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/out2/results.csv"));
}

TEST(Ceilings, BadTbCeilingsValueIsBadInputAndWritesNothing) {
  const std::string out = tmp("ceil-bad.csv");
  const auto r = tb::test::shell("TB_CEILINGS=yes " + std::string(TB_TRAINBENCH_EXE) + " " + kTiny + " --out " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("TB_CEILINGS: 'yes' is not allowed (allowed: 0"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".env.json"));
}

TEST(Ceilings, InProcessMeasurementIsPositiveWithTheArraySizeInRange) {
  const tb::CpuCeilings c = tb::measure_cpu_ceilings(2);
  EXPECT_EQ(c.threads, 2);
  for (double v : {c.fma_gflops_1core, c.fma_gflops_all, c.triad_gbs_1core, c.triad_gbs}) {
    EXPECT_TRUE(std::isfinite(v) && v > 0) << v;
  }
  EXPECT_GE(c.triad_array_bytes, int64_t{16} << 20);
  EXPECT_LE(c.triad_array_bytes, int64_t{256} << 20);
  EXPECT_EQ(c.triad_array_bytes % 64, 0);
  EXPECT_GT(c.duration_s, 0);
}

TEST(Ceilings, OffReasonsInOrderFlagEnvironmentRanks) {
  ::setenv("TB_CEILINGS", "1", 1);
  EXPECT_EQ(tb::ceilings_off_reason(false, false), "");
  EXPECT_EQ(tb::ceilings_off_reason(true, false), "--no-ceilings");
  EXPECT_NE(tb::ceilings_off_reason(false, true).find("multi-process"), std::string::npos);
  ::setenv("TB_CEILINGS", "0", 1);
  EXPECT_EQ(tb::ceilings_off_reason(false, true), "TB_CEILINGS=0");
  ::setenv("TB_CEILINGS", "2", 1);
  EXPECT_THROW(tb::ceilings_off_reason(false, false), tb::UsageError);
  ::setenv("TB_CEILINGS", "0", 1);
}

}  // namespace
