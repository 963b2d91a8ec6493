// tests/cuda_trace/test_cuda_timing_trace.cpp — GPU timing that measures what it says,
// checked on the trace of the real trainbench under the fake CUDA runtime, where the
// runner's stopwatch shows as marks around each timed epoch (harness/trace_mark.h):
//   * the dataset's upload (device placement) happens once per repetition before its
//     timed epochs, never inside one, and fills upload_s / upload_gbps (bytes / s /
//     1e9); empty with host placement and on the CPU;
//   * no event is read (cudaEventElapsedTime) or waited for (cudaEventSynchronize)
//     inside a timed epoch: phases are read after the stopwatch stops;
//   * the events a run creates do not grow with its steps (a fixed pool of timed
//     steps), and the phase totals weight each timed step by the steps it stands for;
//   * --phase-timing off records no phase events and leaves the phase cells empty;
//   * --cuda-graph: every kernel a capture launches was loaded before it (lazy
//     loading), and each step's loss is written inside the graph (no copy per replay).
// (cuda-ddp's all-reduce busy time: test_cuda_ddp_busy_trace.cpp.)
// With nothing executing, the fake ElapsedTime answers 1 ms (or the seq clock): the
// figures are checked for which intervals they add up, never as times.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/backends/phase_sample.h"
#include "tests/cuda_trace/results_csv.h"
#include "tests/cuda_trace/traced_run.h"

namespace {

using namespace tb::trace;

std::string shape(int samples, int batch, int warmup, int reps, int epochs) {
  return " --samples " + std::to_string(samples) + " --batch " + std::to_string(batch) + " --epochs " +
         std::to_string(epochs) + " --warmup " + std::to_string(warmup) + " --reps " + std::to_string(reps) + " ";
}

// kClassify's dataset: 8 features, int32 labels.
constexpr long long kFeatures = 8;

bool is_dataset_upload(const Call& c, long long samples) {
  return c.fn == "cudaMemcpyAsync" && c.get("kind") == "H2D" && c.get("src") == "h" &&
         c.num("bytes") >= samples * kFeatures * 4;
}

int count_in(const Trace& t, size_t from, size_t to, bool (*pred)(const Call&)) {
  int n = 0;
  for (size_t i = from; i < to && i < t.size(); ++i) n += t[i].tid == 0 && pred(t[i]);
  return n;
}
bool is_event_read(const Call& c) { return c.fn == "cudaEventElapsedTime" || c.fn == "cudaEventSynchronize"; }
bool is_elapsed(const Call& c) { return c.fn == "cudaEventElapsedTime"; }
bool is_event_create(const Call& c) { return starts(c.fn, "cudaEventCreate"); }

// ---- the upload ----------------------------------------------------------------------------
TEST(CudaTiming, TheUploadPrecedesEachRepetitionsTimedEpochsAndHasItsOwnColumns) {
  const int samples = 256, reps = 2, epochs = 2;
  for (const char* placement : {"device", "host"}) {
    SCOPED_TRACE(placement);
    const bool device = std::string(placement) == "device";
    const std::string name = std::string("timing-upload-") + placement;
    const TracedRun run = traced(name, std::string("--backend cuda --shuffle --data-placement ") + placement +
                                           kClassify + shape(samples, 32, 1, reps, epochs), 1);
    ASSERT_EQ(run.code, 0) << run.out;
    const Trace& t = run.trace;
    EXPECT_NO_PROBLEMS(check_all(t));
    Problems p;
    const std::vector<TimedSpan> spans = timed_spans(t, &p);
    EXPECT_NO_PROBLEMS(p);
    ASSERT_EQ(spans.size(), static_cast<size_t>(reps * epochs));
    const auto upload = [&](const Call& c) { return is_dataset_upload(c, samples); };
    for (size_t j = 0; j < spans.size(); ++j) {
      for (size_t i = spans[j].begin; i < spans[j].end; ++i) {
        EXPECT_FALSE(upload(t[i])) << "dataset upload inside timed epoch " << j << ": " << t[i].line;
      }
      // Before the first timed epoch: the warm-up's upload and repetition 0's; before a
      // repetition's first epoch its own; none between the epochs of one repetition.
      int before = 0;
      for (size_t i = j == 0 ? 0 : spans[j - 1].end; i < spans[j].begin; ++i) before += upload(t[i]);
      const int want = !device ? 0 : j == 0 ? 2 : j % epochs == 0 ? 1 : 0;
      EXPECT_EQ(before, want) << "uploads before timed epoch " << j;
    }
    const std::vector<Row> rows = read_results(trace_path(name) + ".csv");
    ASSERT_EQ(rows.size(), static_cast<size_t>(reps));
    for (const Row& r : rows) {
      ASSERT_EQ(r.at("status"), "ok");
      if (!device) {
        EXPECT_EQ(r.at("upload_s"), "");
        EXPECT_EQ(r.at("upload_gbps"), "");
        continue;
      }
      const double s = std::stod(r.at("upload_s")), gbps = std::stod(r.at("upload_gbps"));
      EXPECT_GT(s, 0);
      const double bytes = samples * kFeatures * 4.0 + samples * 4.0;  // X and the int32 labels
      EXPECT_NEAR(gbps, bytes / s / 1e9, 1e-6 * gbps);
    }
  }
}

TEST(CudaTiming, ACpuBackendsUploadCellsAreEmpty) {
  const TracedRun run = traced("timing-upload-cpu", "--backend cpu-omp" + kClassify + shape(64, 32, 0, 1, 1), 1);
  ASSERT_EQ(run.code, 0) << run.out;
  const std::vector<Row> rows = read_results(trace_path("timing-upload-cpu") + ".csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("upload_s"), "");
  EXPECT_EQ(rows[0].at("upload_gbps"), "");
}

// ---- phase events read after the stopwatch ------------------------------------------------
struct Case {
  const char* name;
  std::string args;
  int gpus;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class PhaseEvents : public ::testing::TestWithParam<Case> {};

TEST_P(PhaseEvents, AreNeverReadInsideATimedEpochButAfterIt) {
  const std::string name = std::string("timing-read-") + GetParam().name;
  const TracedRun run = traced(name, GetParam().args + kClassify + shape(250, 32, 1, 2, 2), GetParam().gpus);
  ASSERT_EQ(run.code, 0) << run.out;
  const Trace& t = run.trace;
  EXPECT_NO_PROBLEMS(check_all(t));
  Problems p;
  const std::vector<TimedSpan> spans = timed_spans(t, &p);
  EXPECT_NO_PROBLEMS(p);
  ASSERT_EQ(spans.size(), 4u);
  for (size_t j = 0; j < spans.size(); ++j) {
    for (size_t i = spans[j].begin; i < spans[j].end; ++i) {
      EXPECT_FALSE(is_event_read(t[i])) << "event read inside timed epoch " << j << ": " << t[i].line;
    }
    // Read after it: between its end and the next epoch (or the end of the run).
    const size_t next = j + 1 < spans.size() ? spans[j + 1].begin : t.size();
    EXPECT_GT(count_in(t, spans[j].end, next, is_elapsed), 0) << "no phase read after timed epoch " << j;
  }
}

INSTANTIATE_TEST_SUITE_P(Trace, PhaseEvents,
                         ::testing::Values(Case{"cuda_device", "--backend cuda", 1},
                                           Case{"cuda_host", "--backend cuda --data-placement host --shuffle", 1},
                                           Case{"cuda_graph", "--backend cuda --cuda-graph", 1},
                                           Case{"cuda_dp", "--backend cuda-dp --devices 0,1", 2}),
                         [](const auto& info) { return std::string(info.param.name); });

// The events a run creates do not depend on its steps; an epoch longer than the pool
// records the pool's worth of steps, and each phase total weights them back to every step.
class EventPool : public ::testing::TestWithParam<Case> {};

TEST_P(EventPool, IsBoundedWhateverTheStepsAndWeighsTimedStepsBackToAll) {
  const int marks = GetParam().gpus == 1 ? 6 : 11;  // cuda's kMarks, cuda-dp's
  std::vector<int> created;
  for (int samples : {256, 8192}) {  // batches of 16: 16 steps, then 512 (> kMaxTimedSteps)
    const std::string name = std::string("timing-pool-") + GetParam().name + std::to_string(samples);
    const TracedRun run = traced(name, GetParam().args + kClassify + shape(samples, 16, 0, 1, 1), GetParam().gpus);
    ASSERT_EQ(run.code, 0) << run.out;
    const Trace& t = run.trace;
    created.push_back(count_in(t, 0, t.size(), is_event_create));
    Problems p;
    const std::vector<TimedSpan> spans = timed_spans(t, &p);
    ASSERT_EQ(spans.size(), 1u);
    const int steps = samples / 16;
    const int timed = std::min<int>(steps, static_cast<int>(tb::kMaxTimedSteps));
    // Elapsed-time reads after the epoch: (marks - 1) per timed step, cuda-dp's and cuda's alike.
    EXPECT_EQ(count_in(t, spans[0].end, t.size(), is_elapsed), timed * (marks - 1)) << samples;
    // Every interval reads 1 ms: each phase sums to 1 ms x (intervals per step in it) x
    // the epoch's steps, however many were timed (cuda: transfer is one interval per step).
    const std::vector<Row> rows = read_results(trace_path(name) + ".csv");
    ASSERT_EQ(rows.size(), 1u);
    const double per_step_transfer = GetParam().gpus == 1 ? 1 : 5;  // cuda-dp: 5 transfer intervals per step
    EXPECT_NEAR(std::stod(rows[0].at("transfer_s")), per_step_transfer * 1e-3 * steps, 1e-6 * steps) << samples;
  }
  EXPECT_EQ(created[0], created[1]) << "events created grow with the steps";
  EXPECT_LE(created[1], static_cast<int>(tb::kMaxTimedSteps) * marks + 32);
}

INSTANTIATE_TEST_SUITE_P(Trace, EventPool,
                         ::testing::Values(Case{"cuda", "--backend cuda --shuffle", 1},
                                           Case{"cuda_dp", "--backend cuda-dp --devices 0,1", 2}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CudaTiming, PhaseTimingOffRecordsNoPhaseEventsAndLeavesThePhaseCellsEmpty) {
  for (const char* backend : {"cuda", "cuda-dp --devices 0,1"}) {
    SCOPED_TRACE(backend);
    const std::string name = std::string("timing-off-") + (backend[4] == '-' ? "dp" : "cuda");
    const TracedRun run = traced(name, std::string("--backend ") + backend + " --phase-timing off" + kClassify +
                                           shape(256, 32, 1, 2, 2), 2);
    ASSERT_EQ(run.code, 0) << run.out;
    const Trace& t = run.trace;
    EXPECT_NO_PROBLEMS(check_all(t));
    // The only elapsed-time reads left: the upload's, once per warm-up and repetition.
    EXPECT_EQ(count_in(t, 0, t.size(), is_elapsed), 1 + 2);
    for (const Row& r : read_results(trace_path(name) + ".csv")) {
      EXPECT_EQ(r.at("phase_timing"), "false");
      for (const char* c : {"transfer_s", "forward_s", "backward_s", "comm_s", "optimizer_s"}) {
        EXPECT_EQ(r.at(c), "") << c;
      }
      EXPECT_NE(r.at("train_time_s"), "");
    }
  }
}

TEST(CudaTiming, PhaseTimingTakesOnlyOnAndOff) {
  const TracedRun run = traced("timing-bad-flag", "--backend cuda --phase-timing maybe" + kClassify, 1);
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_NE(run.out.find("--phase-timing"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("on, off"), std::string::npos) << run.out;
}

// ---- --cuda-graph --------------------------------------------------------------------------
TEST(CudaTiming, AGraphLaunchesNoKernelNotLoadedBeforeItsCaptureAndWritesItsOwnLoss) {
  for (const char* order : {"", " --shuffle"}) {
    SCOPED_TRACE(order);
    const TracedRun run = traced("timing-graph", std::string("--backend cuda --cuda-graph") + order + kClassify +
                                                     shape(250, 32, 1, 1, 2), 1);
    ASSERT_EQ(run.code, 0) << run.out;
    const Trace& t = run.trace;
    EXPECT_NO_PROBLEMS(check_loaded_before_capture(t));
    int captures = 0, appends = 0, loss_copies = 0, preloads = 0;
    for (const Call& c : t) {
      captures += c.fn == "cudaStreamBeginCapture";
      preloads += c.fn == "cudaFuncGetAttributes" && c.get("kernel").find("sgd_update") != std::string::npos;
      if (c.fn == "launch" && c.get("kernel") == "tb::cuda::append_step_loss_kernel") {
        EXPECT_TRUE(c.capturing()) << "the loss slot is written inside the graph: " << c.line;
        ++appends;
      }
      // The old way: an 8-byte device-to-device copy of the loss after every replay.
      loss_copies += c.fn == "cudaMemcpyAsync" && c.get("kind") == "D2D" && c.num("bytes") == 8;
    }
    EXPECT_GT(captures, 0);
    EXPECT_EQ(appends, captures);
    EXPECT_EQ(loss_copies, 0);
    EXPECT_GT(preloads, 0) << "the SGD kernel is loaded before the first capture";
  }
}

}  // namespace
