// tests/cuda_trace/test_inventory_trace.cpp — the GPU inventory (harness/cuda_probe.cpp)
// under the fake CUDA runtime:
//   * no stray CUDA contexts: a run on GPU 1, and each rank of a cuda-ddp job, touches
//     only its own GPU — the inventory that availability(), make_trainer() and env.json
//     take before the GPU is picked makes no device current and reads no free memory
//     (cudaSetDevice / cudaMemGetInfo would open a context on GPU 0: ~300-500 MB there
//     per process);
//   * `trainbench devices`, the one caller that reads free memory (of every GPU), lists
//     both fake GPUs with it, and the cuBLAS and NCCL versions the libraries report;
//   * env.json holds the same facts (free memory null), the peer matrix, the versions
//     and CUDA_VISIBLE_DEVICES.
#include <gtest/gtest.h>

#include <cublas_api.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cuda_trace/traced_run.h"

namespace {

using namespace tb::trace;

const std::string kShape = " --samples 64 --batch 32 --epochs 1 --warmup 0 --reps 1 ";

TEST(NoStrayContext, RunOnGpu1NeverTouchesGpu0) {
  const TracedRun run = traced("inventory-device1", "--backend cuda --device 1" + kClassify + kShape, 2);
  ASSERT_EQ(run.code, 0) << run.out;
  ASSERT_GT(count(run.trace, "cublasSgemm"), 0) << "the run did not train: " << run.path;
  const Problems p = check_one_device(run.trace, 1);
  EXPECT_TRUE(p.empty()) << p.size() << " problem(s) in " << run.path << ":\n" << report(p);
}

TEST(NoStrayContext, EachCudaDdpRankTouchesOnlyItsGpu) {
#if !TB_TRACE_DDP
  GTEST_SKIP() << "cuda-ddp is not built (needs MPI and NCCL)";
#endif
  const std::string name = "inventory-ddp";
  const TracedRun run = traced(name, "--backend cuda-ddp --comm-timeout 30" + kClassify + kShape, 2, "",
                               tb::test::mpirun(2));
  ASSERT_EQ(run.code, 0) << run.out;
  for (int rank = 0; rank < 2; ++rank) {
    const Trace t = rank_trace(name, rank);
    const std::string where = trace_path(name) + "." + std::to_string(rank) + ".log";
    ASSERT_GT(count(t, "ncclAllReduce"), 0) << "rank " << rank << " did not train: " << where;
    const Problems p = check_one_device(t, rank);
    EXPECT_TRUE(p.empty()) << p.size() << " problem(s) in " << where << ":\n" << report(p);
  }
}

TEST(TraceDevices, ListsBothGpusWithFreeMemoryAndLibraryVersions) {
  const TracedRun run = traced_command("inventory-devices", "devices", 2);
  ASSERT_EQ(run.code, 0) << run.out;
  // The shim's fake GPUs: 80 GiB each, 70 GiB free (trace_shim_runtime.cpp).
  for (const char* gpu : {"gpu 0    Fake GPU 0", "gpu 1    Fake GPU 1"}) {
    EXPECT_NE(run.out.find(gpu), std::string::npos) << gpu << " missing:\n" << run.out;
  }
  EXPECT_EQ(run.out.find("gpu 2"), std::string::npos) << run.out;
  const size_t free_lines = [&] {
    size_t n = 0;
    for (size_t at = run.out.find("81920 MiB total, 71680 MiB free"); at != std::string::npos;
         at = run.out.find("81920 MiB total, 71680 MiB free", at + 1)) {
      ++n;
    }
    return n;
  }();
  EXPECT_EQ(free_lines, 2u) << "free memory of both GPUs expected:\n" << run.out;
  // Free memory is read with each GPU current in turn, then the caller's device (0) is current again.
  std::vector<int> read_on, made_current;
  for (const Call& c : run.trace) {
    if (c.fn == "cudaMemGetInfo") read_on.push_back(c.dev);
    if (c.fn == "cudaSetDevice") made_current.push_back(static_cast<int>(c.num("to")));
  }
  EXPECT_EQ(read_on, (std::vector<int>{0, 1})) << run.path;
  EXPECT_EQ(made_current, (std::vector<int>{0, 1, 0})) << run.path;
  const std::string cublas = "cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) + "." + std::to_string(CUBLAS_VER_MINOR) +
                             "." + std::to_string(CUBLAS_VER_PATCH);
  EXPECT_NE(run.out.find(cublas), std::string::npos) << cublas << " missing:\n" << run.out;
#if TB_TRACE_NCCL
  const std::string nccl = std::string("NCCL ") + TB_TRACE_NCCL_VERSION;
#else
  const std::string nccl = "NCCL none (built without NCCL)";
#endif
  EXPECT_NE(run.out.find(nccl), std::string::npos) << nccl << " missing:\n" << run.out;
}

// env.json: what `devices` lists per GPU but free memory (null: reading it would open
// contexts), the peer matrix, the library versions and CUDA_VISIBLE_DEVICES.
TEST(TraceEnvJson, HoldsTheInventoryVersionsAndVisibleDevices) {
  using Json = nlohmann::json;
  const std::string cublas = std::to_string(CUBLAS_VER_MAJOR) + "." + std::to_string(CUBLAS_VER_MINOR) + "." +
                             std::to_string(CUBLAS_VER_PATCH);
  const std::string cudart = std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
  const Json nccl = TB_TRACE_NCCL ? Json(TB_TRACE_NCCL_VERSION) : Json(nullptr);
  struct Case {
    const char* name;
    std::string env, launcher;
    Json peer_access, visible;
  };
  const std::vector<Case> cases = {
      {"inventory-env", "CUDA_VISIBLE_DEVICES=0,1", "", Json::parse("[[1, 1], [1, 1]]"), Json("0,1")},
      {"inventory-env-no-peer", "TB_FAKE_NO_PEER=1", "env -u CUDA_VISIBLE_DEVICES ", Json::parse("[[1, 0], [0, 1]]"),
       Json(nullptr)},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    const TracedRun run = traced(k.name, "--backend cuda" + kClassify + kShape, 2, k.env, k.launcher);
    ASSERT_EQ(run.code, 0) << run.out;
    const std::string path = trace_path(k.name) + ".csv.env.json";
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Json env;
    ASSERT_NO_THROW(env = Json::parse(text)) << "invalid JSON in " << path << ":\n" << text;
    EXPECT_EQ(env["peer_access"], k.peer_access) << path;
    EXPECT_EQ(env["cuda_visible_devices"], k.visible) << path;
    ASSERT_EQ(env["gpus"].size(), 2u) << path;
    for (int i = 0; i < 2; ++i) {
      const std::string n = std::to_string(i);
      const Json want = {{"index", i},
                         {"name", "Fake GPU " + n + " (tests/cuda_trace, nothing executes)"},
                         {"compute_capability", "9.0"},
                         {"sm_count", 132},
                         {"memory_bytes", 85899345920LL},
                         {"memory_free_bytes", nullptr},
                         {"clock_mhz", 1000},
                         {"memory_clock_mhz", 1000},
                         {"pci_bus_id", "0000:0" + n + ":00.0"}};
      EXPECT_EQ(env["gpus"][i], want) << path;
    }
    EXPECT_EQ(env["driver"], cudart);
    EXPECT_EQ(env["cuda_runtime"], cudart);
    EXPECT_EQ(env["cublas"], cublas);
    EXPECT_EQ(env["nccl_runtime"], nccl);
    EXPECT_TRUE(env["gpu_unavailable_reason"].is_null());
    // Only the trainer reads free memory (its pre-check and DeviceMemoryMeter), on its GPU.
    EXPECT_GE(count(run.trace, "cudaMemGetInfo"), 1) << run.path;
    for (const Call& c : run.trace) {
      if (c.fn == "cudaMemGetInfo") {
        EXPECT_EQ(c.dev, 0) << c.line;
      }
    }
  }
}

}  // namespace
