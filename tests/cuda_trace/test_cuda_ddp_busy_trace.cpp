// tests/cuda_trace/test_cuda_ddp_busy_trace.cpp — cuda-ddp's all-reduce busy time (the t
// of comm_busbw_gbps): the sum of each bucket's own interval between the events recorded
// right before and after its ncclAllReduce on the NCCL stream, not the first bucket's
// start to the last bucket's end, which counts the backward compute between buckets.
// A real 2-rank mpirun job under the fake runtime with TB_FAKE_EVENT_CLOCK=seq (1 us per
// recorded call between two events' records), so the two figures differ and the row's
// busbw can be turned back into the busy time it used. Also: no event is read inside
// the timed epoch on either rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/cuda_trace/results_csv.h"
#include "tests/cuda_trace/traced_run.h"

namespace {

using namespace tb::trace;

TEST(CudaDdpTiming, BusyTimeIsTheSumOfEachBucketsOwnAllReduceInterval) {
#if !TB_TRACE_DDP
  GTEST_SKIP() << "cuda-ddp is not built (needs MPI and NCCL)";
#endif
  const std::string name = "timing-ddp-busy";
  const int steps = 8, world = 2;
  // Buckets of ~512 bytes: several per step, issued during backward (overlap), so
  // backward's calls lie between one bucket's end and the next one's start.
  const TracedRun run = traced(name,
                               "--backend cuda-ddp --bucket-mb 0.0005 --comm-timeout 30 --samples 256 --batch 32 "
                               "--epochs 1 --warmup 0 --reps 1" + kClassify,
                               world, "TB_FAKE_EVENT_CLOCK=seq", tb::test::mpirun(world));
  ASSERT_EQ(run.code, 0) << run.out;
  double busy_max = 0, span_max = 0;
  for (int rank = 0; rank < world; ++rank) {
    const Trace t = rank_trace(name, rank);
    Problems p;
    const std::vector<TimedSpan> spans = timed_spans(t, &p);
    ASSERT_EQ(spans.size(), 1u) << "rank " << rank;
    // Per step (the update ends it): each all-reduce's bracketing records, in n= (1 us each).
    double busy = 0, span = 0;
    long long first = -1, last = -1;
    int buckets = 0;
    for (size_t i = spans[0].begin; i < spans[0].end; ++i) {
      const Call& c = t[i];
      if (c.tid != 0) continue;
      // Nothing read inside the timed epoch: the buckets' and phases' events come after it.
      EXPECT_FALSE(c.fn == "cudaEventElapsedTime" || c.fn == "cudaEventSynchronize")
          << "rank " << rank << " reads an event inside the timed epoch: " << c.line;
      if (c.fn == "ncclAllReduce") {
        // The records right before and after it on its stream (main thread).
        size_t a = i, b = i;
        while (a > 0 && (t[a].tid != 0 || t[a].fn != "cudaEventRecord")) --a;
        while (b + 1 < t.size() && (t[b].tid != 0 || t[b].fn != "cudaEventRecord")) ++b;
        ASSERT_EQ(t[a].get("stream"), c.get("stream")) << t[a].line;
        ASSERT_EQ(t[b].get("stream"), c.get("stream")) << t[b].line;
        busy += static_cast<double>(t[b].n - t[a].n);
        if (first < 0) first = t[a].n;
        last = t[b].n;
        ++buckets;
      }
      if (c.fn == "launch" && c.get("kernel").find("sgd_update") != std::string::npos && first >= 0) {
        span += static_cast<double>(last - first);  // the old figure: first bucket's start to last's end
        first = -1;
      }
    }
    EXPECT_GE(buckets, 2 * steps) << "rank " << rank << ": several buckets per step";
    EXPECT_GT(span, busy * 1.05) << "rank " << rank << ": the fake clock must tell the two apart";
    busy_max = std::max(busy_max, busy * 1e-6);  // us -> s
    span_max = std::max(span_max, span * 1e-6);
  }
  const std::vector<Row> rows = read_results(trace_path(name) + ".csv");
  ASSERT_EQ(rows.size(), 1u);
  // busbw = 2(n-1)/n x bytes per step x steps / busy: recover busy from the row.
  const double bytes = std::stod(rows[0].at("allreduce_bytes_per_step"));
  const double busbw = std::stod(rows[0].at("comm_busbw_gbps"));
  const double busy_row = 2.0 * (world - 1) / world * bytes * steps / (busbw * 1e9);
  EXPECT_NEAR(busy_row, busy_max, 1e-4 * busy_max) << "span would be " << span_max;
}

}  // namespace
