// tests/cuda_trace/test_ceilings_trace.cpp — the GPU half of the measured ceilings
// (harness/ceilings_cuda.cpp) on two fake GPUs whose CUDA events report a scripted time
// (TB_FAKE_ELAPSED_MS): env.json's rates are exactly the FLOPs and bytes of the calls the
// trace shows divided by that time; the SGEMM runs once plain and once with TF32 math;
// every buffer is freed and each GPU's context released (cudaDeviceReset) afterwards.
#include <gtest/gtest.h>

#include <cublas_api.h>

#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cuda_trace/traced_run.h"

namespace {

using namespace tb::trace;

TEST(CeilingsTrace, GpuRatesAreTheTracedWorkOverTheScriptedTime) {
  const TracedRun run = traced("ceilings",
                               "--backend cpu-omp --threads 1 --model linear --layers 8,1 --samples 64 --batch 32 "
                               "--epochs 1 --warmup 0 --reps 1",
                               2, "TB_CEILINGS=1 TB_FAKE_ELAPSED_MS=4");
  ASSERT_EQ(run.code, 0) << run.out;
  std::ifstream in(trace_path("ceilings") + ".csv.env.json");
  const nlohmann::json env = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  const nlohmann::json& gpus = env["ceilings"]["gpus"];
  ASSERT_EQ(gpus.size(), 2u) << env["ceilings"].dump(2);
  for (int i = 0; i < 2; ++i) {
    const nlohmann::json& g = gpus[size_t(i)];
    ASSERT_FALSE(g.contains("unavailable")) << g.dump();
    EXPECT_EQ(g["index"], i);
    const double n = g["gemm_n"].get<double>(), bytes = g["copy_bytes"].get<double>();
    EXPECT_EQ(n, 8192);                  // the fake GPUs report 70 GiB free
    EXPECT_EQ(bytes, double(1 << 30));
    EXPECT_DOUBLE_EQ(g["sgemm_gflops"].get<double>(), 2 * n * n * n / 4e-3 / 1e9);
    EXPECT_DOUBLE_EQ(g["tf32_gflops"].get<double>(), 2 * n * n * n / 4e-3 / 1e9);
    EXPECT_DOUBLE_EQ(g["d2d_gbs"].get<double>(), 2 * bytes / 4e-3 / 1e9);
  }
  EXPECT_TRUE(env["ceilings"]["gpu_reason"].is_null());
  // What was timed: per GPU and math mode one warm-up and five timed 8192^3 GEMMs.
  int gemms = 0, tf32_modes = 0, d2d = 0;
  for (const Call& c : run.trace) {
    if (c.fn == "cublasSgemm" && c.num("m") == 8192 && c.num("n") == 8192 && c.num("k") == 8192) ++gemms;
    if (c.fn == "cublasSetMathMode" && c.num("mode") == CUBLAS_TF32_TENSOR_OP_MATH) ++tf32_modes;
    if (c.fn == "cudaMemcpyAsync" && c.get("kind") == "D2D" && c.num("bytes") == (1 << 30)) ++d2d;
  }
  EXPECT_EQ(gemms, 2 * 2 * 6);
  EXPECT_EQ(tf32_modes, 2);
  EXPECT_EQ(d2d, 2 * 6);
  EXPECT_EQ(count(run.trace, "cudaDeviceReset"), 2);
  EXPECT_EQ(count(run.trace, "cudaMalloc"), count(run.trace, "cudaFree"));
}

TEST(CeilingsTrace, OffByDefaultInTestsSoNoGpuIsTouched) {
  const TracedRun run = traced("ceilings-off",
                               "--backend cpu-omp --threads 1 --model linear --layers 8,1 --samples 64 --batch 32 "
                               "--epochs 1 --warmup 0 --reps 1",
                               2, "TB_CEILINGS=0");
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_EQ(count(run.trace, "cublasSgemm"), 0);
  EXPECT_EQ(count(run.trace, "cudaMalloc"), 0);
}

}  // namespace
