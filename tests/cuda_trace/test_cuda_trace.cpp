// tests/cuda_trace/test_cuda_trace.cpp — the `cuda` backend's host-side call
// discipline, checked on the CPU from the trace of the real trainbench under the fake
// CUDA runtime (trace_shim_*.cpp). Tested as far as the logic allows: which calls are
// made, in which order, on which stream and device — never what they compute (nothing
// executes; the run's numbers are meaningless and not looked at).
//   * every run: streams used with their device current, events and handles on the
//     right device, no failed call, everything released at exit, nothing
//     capture-unsafe while capturing, no two streams touching the same memory without
//     an event (or host synchronisation) ordering them, elapsed times read only from
//     events the host has waited for (check_all in trace.h);
//   * device placement: from the first kernel launch of an epoch to its end no
//     allocation, no resource created, and exactly one host synchronisation — the
//     epoch's end, after the one readback of the step losses; all work on one stream;
//   * host placement: batches staged on the copy stream into two alternating buffers,
//     the next batch's copy issued before the current step's compute, and each side
//     waiting for the other through events (the double-buffer schedule);
//   * --cuda-graph: one capture per staging buffer used, one replay per full batch;
//   * a constructor that fails part-way releases what it had acquired.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "tests/cuda_trace/traced_run.h"

namespace {

using namespace tb::trace;

// Workload of every epoch test: 256 rows in batches of 32 (8 steps), or 250 rows
// (7 full batches + one of 26 rows) where the last short batch matters.
std::string shape(int samples, int warmup, int reps, int epochs) {
  return " --samples " + std::to_string(samples) + " --batch 32 --epochs " + std::to_string(epochs) + " --warmup " +
         std::to_string(warmup) + " --reps " + std::to_string(reps) + " ";
}

// Whether c names `stream`.
bool is_on(const Call& c, const std::string& stream) { return c.get("stream") == stream; }

// ---- the shim itself -------------------------------------------------------------------
std::set<std::string> dynamic_symbols(const std::string& path, bool defined) {
  std::set<std::string> out;
  const std::string cmd = std::string("nm -D ") + (defined ? "--defined-only " : "--undefined-only ") + path;
  const tb::test::ShellResult r = tb::test::shell(cmd);
  if (r.code != 0) return out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream w(line);
    std::vector<std::string> words;
    for (std::string x; w >> x;) words.push_back(x);
    if (words.empty()) continue;
    std::string sym = words.back();
    sym = sym.substr(0, sym.find('@'));
    if (starts(sym, "cuda") || starts(sym, "cublas") || starts(sym, "nccl") || starts(sym, "__cuda")) out.insert(sym);
  }
  return out;
}

TEST(CudaTraceShim, DefinesEveryCudaCublasAndNcclSymbolTrainbenchImports) {
  const std::set<std::string> imported = dynamic_symbols(TB_TRAINBENCH_EXE, false);
  if (imported.empty()) GTEST_SKIP() << "nm -D lists no CUDA imports of trainbench (nm missing?)";
  const std::set<std::string> defined = dynamic_symbols(TB_TRACE_SHIM, true);
  for (const std::string& s : imported) {
    // A call the shim lacks would reach the real library, which fails without a GPU.
    EXPECT_TRUE(defined.count(s)) << s << " is imported by trainbench but not faked by the trace shim";
  }
}

TEST(CudaTraceShim, RecordsTheRunAndNamesItsGpusAsFake) {
  const TracedRun run = traced("shim-smoke", "--backend cuda" + kClassify + shape(64, 0, 1, 1), 1);
  ASSERT_EQ(run.code, 0) << run.out;
  ASSERT_FALSE(run.trace.empty()) << "no trace written to " << run.path;
  EXPECT_GT(count(run.trace, "cublasSgemm"), 0);
  EXPECT_GT(count(run.trace, "launch"), 0);
  for (const Call& c : run.trace) ASSERT_EQ(c.cap, "-") << "capture without --cuda-graph: " << c.line;
  // Whatever a run under the shim writes carries the fake GPU's name: its numbers are meaningless.
  std::ifstream env(trace_path("shim-smoke") + ".csv.env.json");
  const std::string json((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("Fake GPU 0 (tests/cuda_trace, nothing executes)"), std::string::npos) << json;
}

// ---- device placement ------------------------------------------------------------------
struct DeviceCase {
  const char* name;
  std::string args;
};

void PrintTo(const DeviceCase& c, std::ostream* os) { *os << c.name; }  // test names stay stable

class CudaDevicePlacement : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(CudaDevicePlacement, OneSyncPerEpochNoAllocationOneStream) {
  const Plan plan{.warmup = 1, .reps = 2, .epochs = 3, .steps = 8};
  const TracedRun run = traced(std::string("cuda-device-") + GetParam().name,
                               "--backend cuda --data-placement device" + GetParam().args + shape(256, 1, 2, 3), 1);
  ASSERT_EQ(run.code, 0) << run.out;
  const Trace& t = run.trace;
  EXPECT_NO_PROBLEMS(check_all(t));
  std::vector<EpochSpan> ep;
  EXPECT_NO_PROBLEMS(check_epochs(t, plan, &ep));
  ASSERT_EQ(ep.size(), 7u);

  // The count the design gives: one host synchronisation per epoch, from the first
  // kernel launch of its first step to the first kernel launch of the next epoch (same
  // repetition; between repetitions come set_params, the evaluation and the upload).
  for (size_t j = 0; j + 1 < ep.size(); ++j) {
    if (j + 1 == static_cast<size_t>(plan.warmup) || plan.eval_before(static_cast<int>(j) + 1)) continue;
    int syncs = 0;
    for (size_t i = ep[j].first_launch; i < ep[j + 1].first_launch; ++i) syncs += is_host_sync(t[i]);
    EXPECT_EQ(syncs, 1) << "epoch " << j;
  }

  const std::vector<std::string> bound = cublas_streams(t);
  ASSERT_EQ(bound.size(), 1u);
  const std::string compute = bound[0];
  for (const EpochSpan& e : ep) {
    int readbacks = 0;
    for (size_t i = e.first_launch; i <= e.sync; ++i) {
      const Call& c = t[i];
      if (c.has("stream")) {
        EXPECT_TRUE(is_on(c, compute)) << "device placement uses one stream: " << c.line;
      }
      readbacks += c.fn == "cudaMemcpyAsync" && c.get("kind") == "D2H";
    }
    // The step losses stay on the device and are read back once, into pinned memory.
    EXPECT_EQ(readbacks, 1) << "epoch ending at " << t[e.sync].line;
    const Call& before = t[e.sync - 1];
    EXPECT_TRUE(before.fn == "cudaMemcpyAsync" && starts(before.get("dst"), "p")) << before.line;
    EXPECT_TRUE(is_on(t[e.sync], compute)) << t[e.sync].line;
  }
}

INSTANTIATE_TEST_SUITE_P(Trace, CudaDevicePlacement,
                         ::testing::Values(DeviceCase{"unshuffled", kClassify},
                                           DeviceCase{"shuffled", kClassify + " --shuffle "},
                                           DeviceCase{"shuffled_regression_tf32_momentum",
                                                      kRegress + " --shuffle --precision tf32 --momentum 0.9 "}),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- host placement: the double-buffer schedule ----------------------------------------
class CudaHostPlacement : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(CudaHostPlacement, CopyStreamStagesAlternateBuffersOrderedByEvents) {
  const Plan plan{.warmup = 1, .reps = 1, .epochs = 2, .steps = 8};
  const TracedRun run = traced(std::string("cuda-host-") + GetParam().name,
                               "--backend cuda --data-placement host" + GetParam().args + shape(250, 1, 1, 2), 1);
  ASSERT_EQ(run.code, 0) << run.out;
  const Trace& t = run.trace;
  EXPECT_NO_PROBLEMS(check_all(t));
  std::vector<EpochSpan> ep;
  EXPECT_NO_PROBLEMS(check_epochs(t, plan, &ep));
  ASSERT_EQ(ep.size(), 3u);

  const std::vector<std::string> created = created_streams(t), bound = cublas_streams(t);
  ASSERT_EQ(created.size(), 2u);
  ASSERT_EQ(bound.size(), 1u);
  const std::string compute = bound[0], copy = created[0] == compute ? created[1] : created[0];

  std::map<std::string, std::string> recorded_on;  // event -> stream of its latest record
  size_t i = 0;
  for (const EpochSpan& e : ep) {
    int copy_waits = 0, compute_waits = 0;
    std::vector<std::vector<std::string>> fills;  // per staged batch: the blocks written
    std::vector<size_t> fill_at;                  // where each batch's staging began
    std::string last_wait_on;
    for (; i <= e.sync; ++i) {
      const Call& c = t[i];
      if (c.fn == "cudaEventRecord") recorded_on[c.get("event")] = c.get("stream");
      const bool staging = (c.fn == "cudaMemcpyAsync" && starts(c.get("src"), "r")) ||
                           (c.fn == "launch" && c.get("kernel").find("gather") != std::string::npos);
      if (staging) {
        EXPECT_TRUE(is_on(c, copy)) << "staging off the copy stream: " << c.line;
        if (last_wait_on == copy || fills.empty()) {  // the first copy after a wait: a new batch
          fills.emplace_back();
          fill_at.push_back(i);
          last_wait_on.clear();
        }
        for (const Access& a : c.acc) {
          if (a.mode == 'w') fills.back().push_back(a.block);
        }
      } else if (is_kernel_launch(c) || c.fn == "cudaMemsetAsync") {
        EXPECT_TRUE(is_on(c, compute)) << "compute off the compute stream: " << c.line;
      }
      if (c.fn == "cudaStreamWaitEvent") {
        const std::string from = recorded_on[c.get("event")];
        last_wait_on = c.get("stream");
        if (is_on(c, copy)) {
          ++copy_waits;
          EXPECT_EQ(from, compute) << "the copy stream waits for an event not recorded by compute: " << c.line;
        } else {
          ++compute_waits;
          EXPECT_TRUE(is_on(c, compute)) << c.line;
          EXPECT_EQ(from, copy) << "compute waits for an event not recorded by the copy stream: " << c.line;
        }
      }
    }
    // One wait each way per batch: staged before compute reads it, consumed before the copy overwrites it.
    EXPECT_EQ(copy_waits, plan.steps);
    EXPECT_EQ(compute_waits, plan.steps);
    ASSERT_EQ(fills.size(), static_cast<size_t>(plan.steps)) << "staged batches in the epoch ending " << t[e.sync].line;
    for (size_t s = 0; s < fills.size(); ++s) {
      std::sort(fills[s].begin(), fills[s].end());
      if (s >= 1) {  // consecutive batches in different buffers, every other one in the same
        for (const std::string& b : fills[s]) {
          EXPECT_FALSE(std::binary_search(fills[s - 1].begin(), fills[s - 1].end(), b)) << "batch " << s << " " << b;
        }
      }
      if (s >= 2) {
        EXPECT_EQ(fills[s], fills[s - 2]) << "batch " << s;
      }
      // Batch s is staged while step s - 1 computes: issued before step s - 1's update.
      if (s >= 1) {
        EXPECT_LT(fill_at[s], e.step_ends[s - 1]) << "batch " << s << " staged only after step " << s - 1;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Trace, CudaHostPlacement,
                         ::testing::Values(DeviceCase{"unshuffled", kClassify},
                                           DeviceCase{"shuffled_regression", kRegress + " --shuffle "}),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- --cuda-graph ------------------------------------------------------------------------
struct GraphCase {
  const char* name;
  std::string placement;
  bool shuffle;
  int captures;  // one per address a full batch is read from: staging buffers, or each step's rows
};

void PrintTo(const GraphCase& c, std::ostream* os) { *os << c.name; }  // test names stay stable

class CudaGraph : public ::testing::TestWithParam<GraphCase> {};

TEST_P(CudaGraph, OneCapturePerInputAddressOneReplayPerFullBatch) {
  // 250 rows in batches of 32: 7 full batches (replayed) and one of 26 (eager) per epoch.
  const Plan plan{.warmup = 1, .reps = 1, .epochs = 2, .steps = 8};
  const int full = 7;
  const TracedRun run = traced(std::string("cuda-graph-") + GetParam().name,
                               std::string("--backend cuda --cuda-graph ") + (GetParam().shuffle ? "--shuffle " : "") +
                                   "--data-placement " + GetParam().placement + kClassify + shape(250, 1, 1, 2),
                               1);
  ASSERT_EQ(run.code, 0) << run.out;
  const Trace& t = run.trace;
  EXPECT_NO_PROBLEMS(check_all(t));  // includes: nothing capture-unsafe while capturing
  EXPECT_NO_PROBLEMS(check_epochs(t, plan));

  const std::string compute = cublas_streams(t).at(0);
  EXPECT_EQ(count(t, "cudaStreamBeginCapture"), GetParam().captures);
  EXPECT_EQ(count(t, "cudaStreamEndCapture"), GetParam().captures);
  EXPECT_EQ(count(t, "cudaGraphInstantiate"), GetParam().captures);
  EXPECT_EQ(count(t, "cudaGraphLaunch"), plan.total_epochs() * full);
  int eager_updates = 0, captured_updates = 0, captured_calls = 0;
  std::set<std::string> inputs;  // the address each capture's first GEMM reads the batch from
  bool first_gemm = false;
  int staging_copies = 0;  // device-to-device copies bigger than a loss slot, and gathers
  for (const Call& c : t) {
    if (c.fn == "cudaStreamBeginCapture") {
      EXPECT_TRUE(is_on(c, compute)) << c.line;
      first_gemm = true;
    }
    if (c.fn == "cudaGraphLaunch") {
      EXPECT_TRUE(is_on(c, compute)) << c.line;
    }
    if (c.capturing()) ++captured_calls;
    if (c.fn == "cublasSgemm" && c.capturing() && first_gemm) {
      inputs.insert(c.get("b"));  // forward's first GEMM: b is the batch
      first_gemm = false;
    }
    if (c.fn == "launch" && c.get("kernel").find("sgd_update") != std::string::npos) {
      ++(c.capturing() ? captured_updates : eager_updates);
    }
    if ((c.fn == "cudaMemcpyAsync" && c.get("kind") == "D2D" && c.num("bytes") > 8) ||
        (c.fn == "launch" && c.get("kernel").find("gather") != std::string::npos)) {
      ++staging_copies;
    }
  }
  if (GetParam().placement == "device") {  // host placement stages every batch by design
    if (GetParam().shuffle) EXPECT_GT(staging_copies, 0) << "shuffled rows are gathered into the staging buffer";
    else EXPECT_EQ(staging_copies, 0) << "unshuffled resident rows are replayed in place, never copied";
  }
  EXPECT_GT(captured_calls, 0);
  EXPECT_EQ(static_cast<int>(inputs.size()), GetParam().captures) << "captures must read distinct addresses";
  EXPECT_EQ(captured_updates, GetParam().captures);
  EXPECT_EQ(eager_updates, plan.total_epochs() * (plan.steps - full)) << "only the short batch runs eagerly";
}

INSTANTIATE_TEST_SUITE_P(Trace, CudaGraph,
                         ::testing::Values(GraphCase{"device", "device", true, 1}, GraphCase{"host", "host", true, 2},
                                           GraphCase{"device_unshuffled", "device", false, 7}),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- clean-up after a failed constructor ------------------------------------------------
TEST(CudaTrace, ConstructorFailingAtAnyAllocationReleasesWhatItHeld) {
  for (const char* placement : {"device", "host"}) {
    const std::string args =
        std::string("--backend cuda --data-placement ") + placement + kClassify + shape(64, 0, 1, 1);
    const TracedRun ok = traced("cuda-oom", args, 1);
    ASSERT_EQ(ok.code, 0) << ok.out;
    const int allocations = count(ok.trace, "cudaMalloc");
    ASSERT_GT(allocations, 5);
    for (int k = 1; k <= allocations; ++k) {
      const TracedRun run =
          traced("cuda-oom", args, 1, "TB_FAKE_MALLOC_FAIL_AT=" + std::to_string(k));
      SCOPED_TRACE(std::string(placement) + ", allocation " + std::to_string(k) + " fails");
      EXPECT_EQ(run.code, 1) << run.out;
      EXPECT_NE(run.out.find("out of device memory"), std::string::npos) << run.out;
      EXPECT_NO_PROBLEMS(check_released(run.trace));
      EXPECT_EQ(count(run.trace, "launch"), 0);
    }
  }
}

}  // namespace

// ---- a kernel launch failing inside a CUDA-graph capture ----------------------------------
// The step throws mid-capture; the stream must leave capture mode before anything else
// uses it (release() synchronises it), and everything is still released.
TEST(CudaTrace, ALaunchFailingInsideACaptureEndsTheCaptureAndReleasesEverything) {
  const std::string args = "--backend cuda --cuda-graph" + kClassify + shape(250, 0, 1, 1);
  const TracedRun ok = traced("cuda-capture-fail", args, 1);
  ASSERT_EQ(ok.code, 0) << ok.out;
  int k = 0, first_captured = 0;
  for (const Call& c : ok.trace) {
    if (c.fn != "launch") continue;
    ++k;
    if (c.capturing()) {
      first_captured = k;
      break;
    }
  }
  ASSERT_GT(first_captured, 0) << "no kernel launched while capturing";
  const TracedRun run = traced("cuda-capture-fail", args, 1, "TB_FAKE_LAUNCH_FAIL_AT=" + std::to_string(first_captured));
  EXPECT_EQ(run.code, 1) << run.out;
  EXPECT_NE(run.out.find("failed:"), std::string::npos) << run.out;
  EXPECT_EQ(count(run.trace, "cudaStreamBeginCapture"), 1);
  EXPECT_EQ(count(run.trace, "cudaStreamEndCapture"), 1);
  EXPECT_EQ(count(run.trace, "cudaGraphLaunch"), 0);
  EXPECT_NO_PROBLEMS(check_capture(run.trace));
  EXPECT_NO_PROBLEMS(check_released(run.trace));
}
