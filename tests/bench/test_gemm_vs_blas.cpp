// tests/bench/test_gemm_vs_blas.cpp — bench/micro/gemm_vs_blas.cpp against a stand-in
// BLAS (tests/bench/fake_cblas.cpp): the JSON holds every shape of the step with rates
// that follow from its medians; a wrong BLAS result fails the run (exit 1); bad flags
// are bad input (exit 2, the flag named, nothing written); no BLAS is a skip that says why.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/json_file.h"
#include "tests/shell.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kTool = TB_GEMM_VS_BLAS_EXE;
const std::string kFake = std::string(" --blas ") + TB_FAKE_CBLAS_LIB;
// Edge sizes for the 12x32 and 6x16 tiles, a 1-output layer (the skinny paths).
const std::string kSmall = " --layers 40,33,17,1 --batch 19 --reps 3 --threads 2";

std::string out_path(const std::string& name) {
  const std::string p = tb::test::tmp(name);
  fs::remove(p);
  return p;
}

TEST(GemmVsBlas, RecordsEveryStepGemmWithRatesFromItsMedians) {
  const std::string out = out_path("gvb.json");
  const auto r = tb::test::shell(kTool + kSmall + kFake + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const json j = tb::test::read_json_file(out);
  EXPECT_NE(j["blas_library"].get<std::string>().find("fake_cblas"), std::string::npos) << j["blas_library"];
  EXPECT_TRUE(j["results_checked"].get<bool>());
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["reps"], 3);
  // forward and dW for each of the 3 layers, dA for layers 2 and 3.
  const json& g = j["gemms"];
  ASSERT_EQ(g.size(), 8u) << j.dump(2);
  const std::string mnk[8] = {"19x33x40", "33x40x19", "19x17x33", "17x33x19", "19x33x17", "19x1x17", "1x17x19", "19x17x1"};
  double flops = 0, ours = 0, blas = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(g[i]["m_n_k"], mnk[i]) << i;
    const double f = g[i]["gflop"].get<double>(), so = g[i]["ours_median_s"].get<double>(),
                 sb = g[i]["blas_median_s"].get<double>();
    ASSERT_GT(so, 0);
    ASSERT_GT(sb, 0);
    EXPECT_NEAR(g[i]["ours_gflop_per_s"].get<double>(), f / so, 1e-9 * f / so);
    EXPECT_NEAR(g[i]["blas_gflop_per_s"].get<double>(), f / sb, 1e-9 * f / sb);
    EXPECT_NEAR(g[i]["ours_over_blas"].get<double>(), sb / so, 1e-9 * sb / so);
    EXPECT_LE(g[i]["ours_error_over_bound"].get<double>(), 1.0);
    EXPECT_LE(g[i]["blas_error_over_bound"].get<double>(), 1.0);
    flops += f, ours += so, blas += sb;
  }
  EXPECT_NEAR(j["step_gflop"].get<double>(), flops, 1e-12);
  EXPECT_NEAR(j["step_ours_over_blas"].get<double>(), blas / ours, 1e-9 * blas / ours);
  EXPECT_NEAR(j["step_ours_gflop_per_s"].get<double>(), flops / ours, 1e-9 * flops / ours);
  EXPECT_NE(r.out.find("% of the BLAS rate"), std::string::npos) << r.out;
}

TEST(GemmVsBlas, AWrongBlasResultFailsTheRun) {
  const auto r = tb::test::shell("TB_FAKE_CBLAS_WRONG=1 " + kTool + kSmall + kFake);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("WRONG RESULT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAILED"), std::string::npos) << r.out;
}

TEST(GemmVsBlas, BadFlagsAreBadInputAndWriteNothing) {
  const std::string out = out_path("gvb-bad.json");
  const struct {
    std::string args, named;
  } cases[] = {{"--reps 0", "--reps"},       {"--layers 5", "--layers"}, {"--layers 4,x", "--layers"},
               {"--threads two", "--threads"}, {"--batch -3", "--batch"}, {"--bogus 1", "--bogus"},
               {"--reps", "--reps"}};
  for (const auto& c : cases) {
    const auto r = tb::test::shell(kTool + kFake + " --out " + out + " " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.named), std::string::npos) << c.args << ": " << r.out;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
}

// --out is renamed into place: a FIFO (standing in for a device such as /dev/null, which
// a rename as root would replace) or a folder is refused before anything is measured.
TEST(GemmVsBlas, OutMustBeARegularFileInAWritableFolder) {
  const std::string fifo = out_path("gvb-fifo"), folder = out_path("gvb-folder");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directory(folder);
  for (const std::string& bad : {fifo, folder, std::string("/nonexistent-folder/gvb.json")}) {
    const auto r = tb::test::shell(kTool + kSmall + kFake + " --out " + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("--out '" + bad + "'"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("GFLOP/s"), std::string::npos) << "measured before refusing: " << r.out;
  }
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(fs::is_directory(folder));
  fs::remove(fifo);
  fs::remove(folder);
}

TEST(GemmVsBlas, NoBlasIsASkipThatSaysWhy) {
  const std::string out = out_path("gvb-none.json");
  const auto r = tb::test::shell(kTool + kSmall + " --blas /nonexistent/libnoblas.so --out " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("tb_gemm_vs_blas: skipped: no library with cblas_sgemm (tried /nonexistent/libnoblas.so)"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
