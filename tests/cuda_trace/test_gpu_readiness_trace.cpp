// tests/cuda_trace/test_gpu_readiness_trace.cpp — what trainbench and the GPU tests say
// when a GPU cannot run this build, under the fake CUDA runtime (its knobs:
// trace_shim_state.h):
//   * a driver older than the runtime (TB_FAKE_DRIVER_VERSION=12040 under a CUDA 13
//     build): `trainbench devices` and every GPU backend's skipped row name both
//     versions; the GPU tests skip with it, and FAIL with it under TB_REQUIRE_GPU=1;
//   * no driver at all: "no NVIDIA driver (libcuda.so.1 not found)";
//   * no kernel image for the GPU (TB_FAKE_NO_KERNEL_IMAGE=1, an sm_70 GPU): the rows of
//     cuda and cuda-dp are skipped, cuda-ddp's failed, with the rebuild advice;
//   * little device memory: a `failed: out of device memory (needs ~X MiB, free Y MiB)`
//     row whether the pre-check, cuBLAS or NCCL runs out; peak_device_mem_bytes counts
//     what cuBLAS handles and NCCL communicators take (cudaMemGetInfo deltas);
//   * one GPU per task: cuda-ddp's gpu_bus_ids names each rank's own GPU.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "harness/csv_writer.h"
#include "harness/gpu_readiness.h"
#include "kernels/cuda_arch.h"
#include "tests/cuda_trace/traced_run.h"

namespace {

using namespace tb::trace;
using Row = std::map<std::string, std::string>;

const std::string kShape = " --samples 64 --batch 32 --epochs 1 --warmup 0 --reps 1 ";

// results.csv rows as column -> cell maps.
std::vector<Row> rows(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<Row> out;
  if (!std::getline(in, line)) return out;
  const std::vector<std::string> head = tb::csv_fields(line);
  while (std::getline(in, line)) {
    const std::vector<std::string> f = tb::csv_fields(line);
    Row r;
    for (size_t i = 0; i < head.size() && i < f.size(); ++i) r[head[i]] = f[i];
    out.push_back(r);
  }
  return out;
}

Row row_of(const std::vector<Row>& rs, const std::string& backend) {
  for (const Row& r : rs) {
    if (r.at("backend") == backend) return r;
  }
  return {};
}

// `trainbench run --backend BACKEND` under the shim with `env`: its exit code and its row.
struct RowRun {
  TracedRun run;
  Row row;
};
RowRun run_row(const std::string& name, const std::string& backend, const std::string& args, int gpus,
               const std::string& env, const std::string& launcher = "") {
  RowRun r;
  r.run = traced(name, "--backend " + backend + " " + args + kClassify + kShape, gpus, env, launcher);
  r.row = row_of(rows(trace_path(name) + ".csv"), backend);
  return r;
}

// The words for the shim's runtime (the CUDA headers it was built with) under a 12.4 driver.
std::string old_driver_words() {
  return "supports CUDA ≤ 12.4; this build uses the CUDA " + tb::cuda_version_text(CUDART_VERSION) +
         " runtime: update the driver";
}

TEST(OldDriver, DevicesAndEveryGpuBackendSayWhichVersionsDisagree) {
  const TracedRun dev = traced_command("readiness-old-driver-devices", "devices", 2, "TB_FAKE_DRIVER_VERSION=12040");
  ASSERT_EQ(dev.code, 0) << dev.out;
  EXPECT_NE(dev.out.find("gpus     none usable: "), std::string::npos) << dev.out;
  EXPECT_NE(dev.out.find(old_driver_words()), std::string::npos) << dev.out;
  EXPECT_EQ(dev.out.find("insufficient"), std::string::npos) << "CUDA's generic words instead:\n" << dev.out;

  for (const char* b : {"cuda", "cuda-dp", "cuda-ddp"}) {
    const RowRun r = run_row(std::string("readiness-old-driver-") + b, b, "", 2, "TB_FAKE_DRIVER_VERSION=12040");
    EXPECT_EQ(r.run.code, 0) << r.run.out;  // a skipped row is no failure
    ASSERT_FALSE(r.row.empty()) << b << " has no row:\n" << r.run.out;
    EXPECT_EQ(r.row.at("status").rfind("skipped: ", 0), 0u) << b << ": " << r.row.at("status");
    EXPECT_NE(r.row.at("status").find(old_driver_words()), std::string::npos) << b << ": " << r.row.at("status");
    EXPECT_EQ(count(r.run.trace, "cudaMalloc"), 0) << b << ": nothing is allocated on a GPU that cannot run";
  }
}

// The gate (tests/cuda/gpu_gate.h) in the GPU test binary itself: the cuda backend's
// tests under a 12.4 driver skip with the reason — and fail with it under TB_REQUIRE_GPU=1
// (or on a machine with a GPU, where skipping is never allowed).
// The GPU test binary's output, shown in a failure message without gtest's skip marker:
// ctest reads "[  SKIPPED ]" anywhere in a test's output as a skip, which would hide the failure.
std::string shown(std::string out) {
  for (size_t at; (at = out.find("[  SKIPPED ]")) != std::string::npos;) out.replace(at, 12, "[ (skipped) ]");
  return out;
}

TEST(OldDriver, GpuTestsSkipWithTheReasonAndFailWhenAGpuIsRequired) {
  const std::string exe = std::string(TB_TESTS_CUDA_EXE) + " --gtest_filter=CudaBackend.MatchesReference*";
  const std::string env = "env TB_FAKE_GPUS=2 TB_FAKE_DRIVER_VERSION=12040 TB_TRACE_FILE=/dev/null LD_PRELOAD=" +
                          std::string(TB_TRACE_SHIM) + " ";
  const tb::test::ShellResult required = tb::test::shell(env + "TB_REQUIRE_GPU=1 " + exe);
  EXPECT_NE(required.code, 0) << shown(required.out);
  EXPECT_NE(required.out.find("GPU test: "), std::string::npos) << shown(required.out);
  EXPECT_NE(required.out.find(old_driver_words()), std::string::npos) << shown(required.out);
  EXPECT_NE(required.out.find("TB_REQUIRE_GPU=1: a GPU test may not skip"), std::string::npos) << shown(required.out);
  EXPECT_NE(required.out.find("[  FAILED  ]"), std::string::npos) << shown(required.out);

  const tb::test::ShellResult plain = tb::test::shell(env + "TB_REQUIRE_GPU= " + exe);
  if (tb::gpu_present_here()) {  // this machine has a GPU: the gate fails here too
    EXPECT_NE(plain.code, 0) << shown(plain.out);
    EXPECT_NE(plain.out.find("this machine has an NVIDIA GPU"), std::string::npos) << shown(plain.out);
  } else {
    EXPECT_EQ(plain.code, 0) << shown(plain.out);
    EXPECT_NE(plain.out.find("[  SKIPPED ]"), std::string::npos) << shown(plain.out);
    EXPECT_NE(plain.out.find("no usable GPU: "), std::string::npos) << shown(plain.out);
    EXPECT_EQ(plain.out.find("[  FAILED  ]"), std::string::npos) << shown(plain.out);
  }
}

TEST(NoDriver, SaysLibcudaIsMissingInsteadOfCudasGenericError) {
  if (void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    ::dlclose(h);
    GTEST_SKIP() << "this machine has libcuda.so.1: a run here cannot see it missing (NoDeviceReason covers the words)";
  }
  const TracedRun dev = traced_command("readiness-no-driver", "devices", 2, "TB_FAKE_DRIVER_VERSION=0");
  ASSERT_EQ(dev.code, 0) << dev.out;
  EXPECT_NE(dev.out.find("gpus     none usable: no NVIDIA driver (libcuda.so.1 not found)"), std::string::npos)
      << dev.out;
  const RowRun r = run_row("readiness-no-driver", "cuda", "", 2, "TB_FAKE_DRIVER_VERSION=0");
  EXPECT_EQ(r.run.code, 0) << r.run.out;
  ASSERT_FALSE(r.row.empty()) << r.run.out;
  EXPECT_EQ(r.row.at("status"), "skipped: no NVIDIA driver (libcuda.so.1 not found)");
}

// ---- no kernel image ---------------------------------------------------------------------
const std::string kNoImage = "TB_FAKE_NO_KERNEL_IMAGE=1 TB_FAKE_CC=70";  // a V100 under this build

std::string no_image_words() {
  return "this build has no kernel image for sm_70 (built for " + tb::describe_cuda_archs(TB_CUDA_ARCHS) +
         "): rebuild with CMAKE_CUDA_ARCHITECTURES=70";
}

TEST(NoKernelImage, CudaAndCudaDpRowsAreSkippedWithTheRebuildAdvice) {
  for (const char* b : {"cuda", "cuda-dp"}) {
    const RowRun r = run_row(std::string("readiness-no-image-") + b, b, "", 2, kNoImage);
    EXPECT_EQ(r.run.code, 0) << r.run.out;
    ASSERT_FALSE(r.row.empty()) << b << ":\n" << r.run.out;
    EXPECT_EQ(r.row.at("status"), "skipped: " + no_image_words()) << b;
    EXPECT_GT(count(r.run.trace, "cudaFuncGetAttributes"), 0) << b << " decides by a probe: " << r.run.path;
    EXPECT_EQ(count(r.run.trace, "launch"), 0) << b;
    EXPECT_EQ(count(r.run.trace, "cudaMalloc"), 0) << b;
  }
  // Where the GPU has an image the same probe lets the run go on.
  const RowRun ok = run_row("readiness-image", "cuda", "", 2, "TB_FAKE_CC=75");
  EXPECT_EQ(ok.run.code, 0) << ok.run.out;
  EXPECT_EQ(ok.row.at("status"), "ok");
}

TEST(NoKernelImage, CudaDdpRanksFailTogetherWithTheRebuildAdvice) {
#if !TB_TRACE_DDP
  GTEST_SKIP() << "cuda-ddp is not built (needs MPI and NCCL)";
#endif
  const RowRun r = run_row("readiness-no-image-ddp", "cuda-ddp", "--comm-timeout 30", 2, kNoImage, tb::test::mpirun(2));
  EXPECT_NE(r.run.code, 0) << r.run.out;
  ASSERT_FALSE(r.row.empty()) << r.run.out;
  EXPECT_EQ(r.row.at("status"), "failed: " + no_image_words());
  for (int rank = 0; rank < 2; ++rank) {
    const Trace t = rank_trace("readiness-no-image-ddp", rank);
    EXPECT_EQ(count(t, "launch"), 0) << "rank " << rank;
    EXPECT_EQ(count(t, "ncclCommInitRankConfig"), 0) << "rank " << rank << ": refused before NCCL";
  }
}

// ---- device memory -------------------------------------------------------------------------
// "failed: out of device memory (needs ~X MiB, free Y MiB)": X and Y as numbers.
struct Oom {
  long long needs = -1, free = -1;
};
Oom oom_numbers(const std::string& status) {
  Oom o;
  std::sscanf(status.c_str(), "failed: out of device memory (needs ~%lld MiB, free %lld MiB)", &o.needs, &o.free);
  return o;
}

TEST(DeviceMemory, TooLittleFreeIsAFailedRowWithTheNumbersWhoeverRunsOut) {
  struct Case {
    const char* name;
    std::string env;
    long long free_mib;
    const char* where;  // the call that ran out, named after the numbers
  };
  // The cuda trainer's pre-check refuses (~33 MiB: 32 for cuBLAS's workspace); with room
  // for that, cublasCreate's own memory or the arena's next cudaMalloc runs out.
  const std::vector<Case> cases = {
      {"precheck", "TB_FAKE_FREE_MIB=8", 8, "refused before allocating"},
      {"cublas", "TB_FAKE_FREE_MIB=40 TB_FAKE_CUBLAS_MIB=64", 40, "CUBLAS_STATUS_ALLOC_FAILED"},
      {"arena", "TB_FAKE_FREE_MIB=40 TB_FAKE_CUBLAS_MIB=30", 10, "cudaMalloc of"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string name = std::string("readiness-oom-") + c.name;
    const RowRun r = run_row(name, "cuda", "", 1, c.env);
    const TracedRun& run = r.run;
    EXPECT_EQ(run.code, 1) << run.out;
    ASSERT_FALSE(r.row.empty()) << run.out;
    const std::string status = r.row.at("status");
    const Oom o = oom_numbers(status);
    EXPECT_GE(o.needs, 33) << status;
    EXPECT_LE(o.needs, 34) << status;
    EXPECT_EQ(o.free, c.free_mib) << status;
    EXPECT_NE(status.find(c.where), std::string::npos) << status;
    const Problems p = check_released(run.trace);
    EXPECT_TRUE(p.empty()) << p.size() << " problem(s) in " << run.path << ":\n" << report(p);
  }
}

TEST(DeviceMemory, NcclRunningOutIsTheSameRow) {
#if !TB_TRACE_DDP
  GTEST_SKIP() << "cuda-ddp is not built (needs MPI and NCCL)";
#endif
  const std::string name = "readiness-oom-nccl";
  const RowRun r = run_row(name, "cuda-ddp", "--comm-timeout 30", 2, "TB_FAKE_FREE_MIB=100 TB_FAKE_NCCL_MIB=200",
                           tb::test::mpirun(2));
  EXPECT_NE(r.run.code, 0) << r.run.out;
  ASSERT_FALSE(r.row.empty()) << r.run.out;
  const std::string status = r.row.at("status");
  const Oom o = oom_numbers(status);
  EXPECT_GE(o.needs, 33) << status;
  EXPECT_LE(o.needs, 34) << status;
  EXPECT_EQ(o.free, 100) << status;
  EXPECT_NE(status.find("NcclGradReducer"), std::string::npos) << "the communicator's set-up: " << status;
}

// peak_device_mem_bytes with the libraries' memory (what cudaMemGetInfo saw go) against
// the same run without: the difference is exactly what the shim's cuBLAS handle and NCCL
// communicator took. The context (TB_FAKE_CONTEXT_MIB) exists before free memory can be
// read, as with CUDA, and is not in the figure.
long long peak_of(const std::string& name, const std::string& backend, const std::string& env,
                  const std::string& launcher = "") {
  const RowRun r = run_row(name, backend, "--comm-timeout 30", 2, env, launcher);
  EXPECT_EQ(r.run.code, 0) << r.run.out;
  EXPECT_FALSE(r.row.empty()) << r.run.out;
  return r.row.empty() ? -1 : std::stoll(r.row.at("peak_device_mem_bytes"));
}

TEST(DeviceMemory, PeakCountsCublasAndNcclMemory) {
  const long long mib = 1 << 20;
  const long long base = peak_of("readiness-peak-base", "cuda", "TB_FAKE_CONTEXT_MIB=300");
  const long long with = peak_of("readiness-peak-cublas", "cuda", "TB_FAKE_CONTEXT_MIB=300 TB_FAKE_CUBLAS_MIB=48");
  EXPECT_GT(base, 32 * mib) << "at least cuBLAS's workspace";
  EXPECT_EQ(with - base, 48 * mib);
#if TB_TRACE_DDP
  const long long ddp_base = peak_of("readiness-peak-ddp-base", "cuda-ddp", "", tb::test::mpirun(2));
  const long long ddp = peak_of("readiness-peak-ddp", "cuda-ddp", "TB_FAKE_CUBLAS_MIB=8 TB_FAKE_NCCL_MIB=40",
                                tb::test::mpirun(2));
  EXPECT_EQ(ddp - ddp_base, 48 * mib);
#endif
}

// ---- which physical GPUs ------------------------------------------------------------------
TEST(GpuBusIds, OneGpuPerTaskNamesEachRanksOwnGpu) {
#if !TB_TRACE_DDP
  GTEST_SKIP() << "cuda-ddp is not built (needs MPI and NCCL)";
#endif
  // Each rank sees one GPU, device 0, at bus 0 + its node-local rank (TB_FAKE_BIND_PER_RANK).
  const std::string name = "readiness-bus-bound";
  const RowRun r = run_row(name, "cuda-ddp", "--comm-timeout 30", 1, "TB_FAKE_BIND_PER_RANK=1", tb::test::mpirun(2));
  ASSERT_EQ(r.run.code, 0) << r.run.out;
  ASSERT_FALSE(r.row.empty()) << r.run.out;
  EXPECT_EQ(r.row.at("devices"), "0,0");
  EXPECT_EQ(r.row.at("gpu_bus_ids"), "0000:00:00.0,0000:01:00.0");
}

TEST(GpuBusIds, CudaAndCudaDpNameTheirGpusAndARepeatedOne) {
  const RowRun one = run_row("readiness-bus-cuda", "cuda", "--device 1", 2, "");
  ASSERT_EQ(one.run.code, 0) << one.run.out;
  EXPECT_EQ(one.row.at("devices"), "1");
  EXPECT_EQ(one.row.at("gpu_bus_ids"), "0000:01:00.0");
  const RowRun dp = run_row("readiness-bus-dp", "cuda-dp", "--devices 1,1,0", 2, "");
  ASSERT_EQ(dp.run.code, 0) << dp.run.out;
  EXPECT_EQ(dp.row.at("devices"), "1,1,0");
  EXPECT_EQ(dp.row.at("gpu_bus_ids"), "0000:01:00.0,0000:01:00.0,0000:00:00.0");
}

}  // namespace
