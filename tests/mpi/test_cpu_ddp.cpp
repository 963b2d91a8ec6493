// tests/mpi/test_cpu_ddp.cpp — cpu-ddp through real mpirun jobs: the same parameters
// as cpu-omp and reference at world sizes 1, 2 and 3 (oversubscribed on 2 cores),
// with a batch not divisible by the world size, any bucket size and with or without
// overlap; and every injected fault ends the whole job non-zero within 20 s of the
// fault (timed from the faulty rank's announcement, so mpirun's start-up on a loaded
// machine is not in the bound; the whole-job `timeout` is only a hang guard).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "harness/csv_writer.h"
#include "harness/mpi_launch.h"
#include "harness/params_file.h"
#include "tests/shell.h"

namespace {

namespace fs = std::filesystem;
using Result = tb::test::ShellResult;
const auto& sh = tb::test::shell;

using tb::test::mpirun;

using tb::test::tmp;  // tests/shell.h

// 203 rows, batch 26: 8 batches, the last of 21 rows; 26 and 21 split unevenly over 3 ranks.
const std::string kWorkload =
    " --model mlp --layers 12,20,9,4 --samples 203 --batch 26 --epochs 2 --warmup 0 --reps 1 --lr 0.2 "
    "--momentum 0.5 --shuffle --threads 1 --comm-timeout 5";

std::vector<float> train(const std::string& prefix, const std::string& backend, const std::string& extra,
                         const std::string& name) {
  const std::string params = tmp(name + ".params");
  const Result r = sh(prefix + TB_TRAINBENCH_EXE + " run --backend " + backend + kWorkload + " " + extra +
                      " --save-params " + params + " --out " + tmp(name + ".csv"));
  EXPECT_EQ(r.code, 0) << r.out;
  return r.code == 0 ? tb::read_params_file(params) : std::vector<float>{};
}

// float32 sums in a different order (per-rank partial gradients) differ by rounding
// only: 1e-5 relative with a 1e-3 absolute floor, over 16 steps.
void expect_close(const std::vector<float>& a, const std::vector<float>& b, double rel, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  ASSERT_FALSE(a.empty()) << what;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / (std::abs(double(b[i])) + 1e-3));
  }
  EXPECT_LT(worst, rel) << what;
}

TEST(CpuDdp, MatchesCpuOmpAndReferenceAtWorldSizes123) {
  const std::vector<float> ref = train("", "reference", "", "ref");
  const std::vector<float> omp = train("", "cpu-omp", "", "omp");
  expect_close(omp, ref, 1e-4, "cpu-omp vs reference");
  for (int np : {1, 2, 3}) {
    const std::vector<float> ddp = train(mpirun(np), "cpu-ddp", "", "ddp" + std::to_string(np));
    expect_close(ddp, omp, 2e-5, "cpu-ddp np=" + std::to_string(np) + " vs cpu-omp");
    expect_close(ddp, ref, 1e-4, "cpu-ddp np=" + std::to_string(np) + " vs reference");
  }
}

TEST(CpuDdp, LinearRegressionTakesTheFusedStepAndStillMatches) {
  // Linear regression runs cpu-omp's fused one-pass step on each rank's shard.
  const std::string w = " --model linear --layers 12,3 --samples 203 --batch 26 --epochs 2 --warmup 0 --reps 1 "
                        "--lr 0.1 --momentum 0.5 --shuffle --threads 1 --comm-timeout 5";
  auto run_params = [&](const std::string& prefix, const std::string& backend, const std::string& name) {
    const std::string params = tmp(name + ".params");
    const Result r = sh(prefix + TB_TRAINBENCH_EXE + " run --backend " + backend + w + " --save-params " + params);
    EXPECT_EQ(r.code, 0) << r.out;
    return r.code == 0 ? tb::read_params_file(params) : std::vector<float>{};
  };
  const std::vector<float> ref = run_params("", "reference", "lin-ref");
  for (int np : {1, 2, 3}) {
    expect_close(run_params(mpirun(np), "cpu-ddp", "lin-ddp" + std::to_string(np)), ref, 1e-4,
                 "linear cpu-ddp np=" + std::to_string(np) + " vs reference");
  }
}

// The value of column `name` in the first data row of a results CSV.
std::string csv_field(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const std::vector<std::string> h = tb::csv_fields(header), v = tb::csv_fields(row);
  for (size_t i = 0; i < h.size() && i < v.size(); ++i) {
    if (h[i] == name) return v[i];
  }
  return "";
}

TEST(CpuDdp, RanksHoldingOnlyTheirRowsMatchReferenceUnshuffledWithDropLastAndLongWarmup) {
  // Each rank generates only the rows it reads (harness/rank_data.h): here, without
  // shuffling, about a third of them; warm-up epochs beyond --epochs reuse the orders,
  // and the rows --drop-last leaves out are still evaluated (by the ranks' shards).
  const std::string w = " --model mlp --layers 12,20,4 --samples 203 --batch 26 --epochs 1 --warmup 2 --reps 1 "
                        "--lr 0.2 --drop-last --threads 1 --comm-timeout 5";
  auto run = [&](const std::string& prefix, const std::string& backend, const std::string& name) {
    const std::string params = tmp(name + ".params"), out = tmp(name + ".csv");
    const Result r = sh(prefix + TB_TRAINBENCH_EXE + " run --backend " + backend + w + " --save-params " + params +
                        " --out " + out);
    EXPECT_EQ(r.code, 0) << r.out;
    return std::make_pair(r.code == 0 ? tb::read_params_file(params) : std::vector<float>{},
                          std::atof(csv_field(out, "final_loss").c_str()));
  };
  const auto [ref, ref_loss] = run("", "reference", "held-ref");
  const auto [ddp, ddp_loss] = run(mpirun(3), "cpu-ddp", "held-ddp3");
  expect_close(ddp, ref, 1e-4, "cpu-ddp np=3 unshuffled, drop-last vs reference");
  ASSERT_GT(ref_loss, 0);
  EXPECT_NEAR(ddp_loss, ref_loss, 1e-4 * ref_loss) << "final loss over all 203 rows, summed over the ranks' slices";
}

TEST(CpuDdp, BucketSizeAndOverlapDoNotChangeTheResult) {
  // Bucketing only changes which bytes travel together, never the sums: bitwise equal.
  const std::vector<float> base = train(mpirun(2), "cpu-ddp", "", "b-default");
  ASSERT_FALSE(base.empty());
  for (const char* extra : {"--bucket-mb 0.000001", "--bucket-mb 0.0004", "--no-overlap"}) {
    const std::vector<float> p = train(mpirun(2), "cpu-ddp", extra, "b" + std::to_string(std::string(extra).size()));
    EXPECT_EQ(p, base) << extra;
  }
}

TEST(CpuDdp, ReportsWorldSizeCommunicationAndOnlyRankZeroWrites) {
  const std::string out = tmp("comm.csv");
  const Result r = sh(mpirun(2) + TB_TRAINBENCH_EXE + " run --backend cpu-ddp" + kWorkload + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(out);
  std::string header, row, extra;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_FALSE(std::getline(in, extra)) << "one row expected (rank 0 only)";
  EXPECT_NE(row.find(",cpu-ddp,mlp,"), std::string::npos) << row;
  // world_size 2, and 4*(12*20+20 + 20*9+9 + 9*4+4) = 1956 bytes all-reduced per step;
  // the knobs cpu-ddp honours and its traits are columns too.
  for (const auto& [name, want] : std::vector<std::pair<std::string, std::string>>{
           {"world_size", "2"}, {"devices", "cpu"}, {"threads", "1"}, {"repetition", "0"},
           {"allreduce_bytes_per_step", "1956"}, {"bucket_mb", "25"}, {"overlap", "true"},
           {"deterministic", "false"}, {"cuda_graph", ""}, {"parallelism", "ddp"}, {"scaling_base", "cpu-omp"}}) {
    EXPECT_EQ(csv_field(out, name), want) << name << " in " << row;
  }
}

class CpuDdpFault : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuDdpFault, EndsTheWholeJobNonZeroWithinSecondsOfTheFault) {
  const std::string out = tmp("fault-" + GetParam() + ".csv");
  // setup fails before any step: only an abort, not the watchdog (60 s here), ends it in time.
  const std::string workload =
      tb::test::with_flags(kWorkload, GetParam() == "setup" ? "--comm-timeout 60" : "--comm-timeout 3");
  const Result r = sh("TB_FAULT=rank=1,step=3,kind=" + GetParam() + " timeout 100 " + mpirun(2) + TB_TRAINBENCH_EXE +
                      " run --backend cpu-ddp" + workload + " --out " + out);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.code, 124) << "hang guard: the job ran 100 s\n" << r.out;
  const double after = tb::test::seconds_after_fault(r);
  EXPECT_GE(after, 0) << "no fault announced (exit code " << r.code << ")\n" << r.out;
  EXPECT_LT(after, 20.0) << r.out;
  if (GetParam() == "nan") {
    // Agreed collectively: a failed row (rank 0 writes it), not a crash.
    EXPECT_EQ(r.code, 1) << r.out;
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_NE(ss.str().find("failed: non-finite loss at epoch 1 step 3"), std::string::npos) << ss.str();
  } else {
    if (GetParam() == "throw" || GetParam() == "hang" || GetParam() == "setup") {
      EXPECT_NE(r.out.find("rank "), std::string::npos) << r.out;  // the error names a rank
    }
    // No partial row: at most the header.
    std::ifstream in(out);
    int lines = 0;
    for (std::string l; std::getline(in, l);) ++lines;
    EXPECT_LE(lines, 1);
  }
}

// setup: rank 1 fails alone before any collective of training (the others wait in the
// parameter broadcast): it must abort the job, not leave it to the watchdog's deadline.
INSTANTIATE_TEST_SUITE_P(Kinds, CpuDdpFault, ::testing::Values("throw", "exit", "kill", "hang", "nan", "setup"));

// A suite's job that dies after some repetitions were written: those rows stay, and the
// repetition it died in is a failed row naming the launcher and the status, exit 1 (it
// was a silent success: rows 0 and 1 ok, exit 0). 16 steps a repetition (8 batches, 2
// epochs): step 20 is in repetition 1.
TEST(CpuDdpSuite, AJobThatDiesAfterSomeRepetitionsFailsTheOneItDiedIn) {
  const std::string suite = tmp("dies-late.suite"), dir = tmp("dies-late-run");
  fs::remove_all(dir);
  std::string entry = kWorkload;
  entry.replace(entry.find("--reps 1"), 8, "--reps 3");
  std::ofstream(suite) << "late:" << entry << " --backends cpu-ddp --world-sizes 2\n";
  const Result r = sh("TB_FAULT=rank=1,step=20,kind=exit timeout 100 " + std::string(TB_TRAINBENCH_EXE) + " suite " +
                      suite + " --out " + dir + " --no-ceilings");
  EXPECT_EQ(r.code, 1) << r.out;
  std::ifstream in(dir + "/results.csv");
  std::string header, line;
  std::getline(in, header);
  std::vector<std::string> rows;
  while (std::getline(in, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 2u) << r.out;
  const auto cell = [&](const std::string& row, const char* name) {
    const std::vector<std::string> h = tb::csv_fields(header), f = tb::csv_fields(row);
    const size_t i = static_cast<size_t>(std::find(h.begin(), h.end(), name) - h.begin());
    return i < f.size() ? f[i] : std::string("?");
  };
  EXPECT_EQ(cell(rows[0], "status"), "ok");
  EXPECT_EQ(cell(rows[0], "repetition"), "0");
  EXPECT_EQ(cell(rows[1], "repetition"), "1");
  EXPECT_NE(cell(rows[1], "status").find(" -np 2 exited with status "), std::string::npos) << rows[1];
  EXPECT_EQ(cell(rows[1], "status").rfind("failed: ", 0), 0u) << rows[1];
}

}  // namespace

namespace {

TEST(CpuDdp, DeterministicModeIsBitwiseEqualAcrossRunsAndWorldSizes124) {
  const std::vector<float> one = train(mpirun(1), "cpu-ddp", "--deterministic", "det1");
  ASSERT_FALSE(one.empty());
  EXPECT_EQ(train(mpirun(1), "cpu-ddp", "--deterministic", "det1b"), one) << "repeated run";
  EXPECT_EQ(train(mpirun(2), "cpu-ddp", "--deterministic", "det2"), one) << "world size 2";
  EXPECT_EQ(train(mpirun(4), "cpu-ddp", "--deterministic", "det4"), one) << "world size 4";
  // And it still learns what the others learn.
  expect_close(one, train("", "reference", "", "det-ref"), 1e-4, "deterministic vs reference");
}

// --deterministic exchanges the gradient by an all-gather of its 12 leaf gradients (12 x
// allreduce_bytes_per_step on every rank): bus bandwidth (n-1)/n x 12 x bytes x steps / t,
// t inside the gathers. It was computed as one all-reduce (2(n-1)/n x bytes), 6x too low
// at 2 ranks. t is at most comm_s (which adds the loss values' gather), so x =
// busbw x comm_s / (bytes x steps) >= (n-1)/n x 12 = 6; the all-reduce formula gave 1.
TEST(CpuDdp, DeterministicBusBandwidthCountsTheAllGathersBytes) {
  const std::string out = tmp("det-busbw.csv");
  // 64*256+256 + 256*10+10 = 19,210 parameters: 12 x 77 KB gathered a step.
  const Result r = sh(mpirun(2) + TB_TRAINBENCH_EXE + " run --backend cpu-ddp --deterministic --model mlp --layers "
                      "64,256,10 --samples 1200 --batch 120 --epochs 2 --warmup 0 --reps 1 --threads 1 "
                      "--comm-timeout 30 --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const double bytes = std::stod(csv_field(out, "allreduce_bytes_per_step"));
  EXPECT_EQ(bytes, 4.0 * 19210);
  const double steps = 2 * 10, comm_s = std::stod(csv_field(out, "comm_s"));
  const double x = std::stod(csv_field(out, "comm_busbw_gbps")) * 1e9 * comm_s / (bytes * steps);
  EXPECT_GE(x, 6 * 0.999) << "busbw x comm_s / (bytes x steps), comm_s " << comm_s;
}

// Decided before anything is allocated, like any knob a configuration cannot honour:
// one skipped row naming the flag, written by rank 0.
TEST(CpuDdp, DeterministicModeRefusesAWorldSizeThatDoesNotDivideTheLeaves) {
  const std::string out = tmp("det5.csv");
  const Result r = sh(mpirun(5) + TB_TRAINBENCH_EXE + " run --backend cpu-ddp --deterministic" + kWorkload +
                      " --out " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  EXPECT_NE(text.find(",skipped: --deterministic: the world size 5 does not divide the 12 leaves"), std::string::npos)
      << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << "header and one row";
}

}  // namespace
