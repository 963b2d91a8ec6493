// tests/harness/test_time_to_target.cpp — `--target-loss X` (README "Time to target"):
// the runner evaluates the loss over the whole training set after every timed epoch
// until it is first <= X, and the row carries the epoch and the time (evaluations
// included). The loss curve the targets are placed on comes from `reference`: a run of
// k epochs' final_loss is exactly the evaluation after epoch k of a longer run (same
// init, same rows in the same order, float64 arithmetic).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/cli.h"
#include "harness/env_capture.h"
#include "harness/result_schema.h"
#include "harness/runner.h"
#include "harness/suite.h"
#include "harness/timing.h"
#include "test_helpers.h"
#include "tests/shell.h"

namespace tb {
namespace {

struct Capture final : RowSink {
  std::vector<ResultRow> rows;
  void add(const ResultRow& r, const std::vector<CurvePoint>&) override { rows.push_back(r); }
};

// Linear regression 16 -> 1 on 512 rows, batch 64: the loss falls steeply over the
// first epochs at lr 0.05 (8 SGD steps an epoch).
RunConfig small(const std::string& backend, int64_t epochs, double target) {
  RunConfig c = test::regression_config(backend, {16, 1}, 512, /*data_seed=*/3);
  c.workload = "ttt";
  c.batch = 64;
  c.epochs = epochs;
  c.lr = 0.05;
  c.target_loss = target;
  return c;
}

struct Ran {
  ResultRow row;
  double wall_s = 0;  // the whole run_configuration call, measured here
};

Ran train(const RunConfig& c) {
  const Dataset data = test::synthetic(Task::kRegression, c.data.n, 16, 1, c.data.seed);
  Job single;
  Progress quiet(false);
  Capture sink;
  const RunIdentity id{"20261123-000000-test", "2026-11-23T00:00:00Z", "test"};
  const Stopwatch sw;
  const RunOutcome o = run_configuration(c, data, single, id, quiet, sink);
  Ran r;
  r.wall_s = sw.seconds();
  EXPECT_FALSE(o.failed) << o.failure;
  EXPECT_EQ(sink.rows.size(), 1u);
  if (!sink.rows.empty()) r.row = sink.rows[0];
  return r;
}

// The reference's evaluated loss after epoch k (k = 1..3).
std::vector<double> reference_curve() {
  std::vector<double> loss;
  for (int64_t k = 1; k <= 3; ++k) loss.push_back(train(small("reference", k, -1)).row.final_loss);
  return loss;
}

std::string cell(const ResultRow& r, const std::string& name) {
  for (const Column& c : result_columns()) {
    if (name == c.name) return result_cell(c, r);
  }
  ADD_FAILURE() << "no column " << name;
  return "";
}

TEST(TimeToTarget, TheEpochIsTheFirstWhoseEvaluatedLossReachesTheTarget) {
  const std::vector<double> ref = reference_curve();
  ASSERT_LT(ref[1], ref[0] * 0.9);  // a curve that falls: the targets below are an epoch apart
  ASSERT_LT(ref[2], ref[1] * 0.99);
  // Above epoch 1's loss: reached at epoch 1. Between epochs 1 and 2: at 2. Between 2 and 3: at 3.
  const struct {
    double target;
    int64_t epoch;
  } cases[] = {{ref[0] * 1.01, 1}, {(ref[0] + ref[1]) / 2, 2}, {(ref[1] + ref[2]) / 2, 3}};
  for (const std::string backend : {"reference", "cpu-omp"}) {
    for (const auto& k : cases) {
      const Ran r = train(small(backend, 3, k.target));
      EXPECT_EQ(r.row.target_epoch, k.epoch) << backend << " target " << k.target;
      EXPECT_EQ(cell(r.row, "target_reached"), "true") << backend;
      EXPECT_EQ(cell(r.row, "target_epoch"), std::to_string(k.epoch)) << backend;
      EXPECT_FALSE(cell(r.row, "time_to_target_s").empty()) << backend;
      EXPECT_GT(r.row.time_to_target_s, 0) << backend;
      EXPECT_LE(r.row.time_to_target_s, r.wall_s) << backend;
      // Reached after the last timed epoch: the clock holds every epoch, and evaluations.
      if (k.epoch == 3) {
        EXPECT_GE(r.row.time_to_target_s, r.row.train_time_s) << backend;
      }
      // Training is not cut short: the timed epochs all run (samples/s stays comparable).
      EXPECT_NEAR(r.row.final_loss, ref[2], 1e-4 * ref[2]) << backend;
    }
  }
}

TEST(TimeToTarget, ReachedInTheOnlyEpochTakesAtLeastThatEpochAndAtMostTheRun) {
  const std::vector<double> ref = reference_curve();
  const Ran r = train(small("cpu-omp", 1, ref[0] * 1.01));
  ASSERT_EQ(r.row.target_epoch, 1);
  // train_time_s is epoch 1's training time; the evaluation after it is inside the clock.
  EXPECT_GE(r.row.time_to_target_s, r.row.train_time_s);
  EXPECT_LE(r.row.time_to_target_s, r.wall_s);
}

TEST(TimeToTarget, AnUnreachableTargetIsReportedAsNotReached) {
  const Ran r = train(small("cpu-omp", 2, 0.0));  // noisy labels: the loss never reaches 0
  EXPECT_EQ(r.row.target_epoch, -1);
  EXPECT_EQ(cell(r.row, "target_loss"), "0");
  EXPECT_EQ(cell(r.row, "target_reached"), "false");
  EXPECT_EQ(cell(r.row, "time_to_target_s"), "");
  EXPECT_EQ(cell(r.row, "target_epoch"), "");
}

TEST(TimeToTarget, WithoutATargetTheCellsAreEmpty) {
  const Ran r = train(small("cpu-omp", 1, -1));
  for (const char* col : {"target_loss", "target_reached", "time_to_target_s", "target_epoch"}) {
    EXPECT_EQ(cell(r.row, col), "") << col;
  }
}

TEST(TimeToTarget, TheFlagParsesInRunAndSuiteLines) {
  RunFlags f;
  parse_run_flags({"--target-loss", "0.25"}, false, &f);
  EXPECT_DOUBLE_EQ(f.config.target_loss, 0.25);
  const std::string dir = test::tmp("ttt-suite");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/t.suite") << "defaults: --target-loss 0.5\n"
                                     "a: --backends reference,cpu-omp --samples 100 --batch 10\n"
                                     "b: --samples 100 --batch 10 --target-loss 0\n";
  const std::vector<RunConfig> cs = expand_suite(parse_suite(dir + "/t.suite"));
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_DOUBLE_EQ(cs[0].target_loss, 0.5);
  EXPECT_DOUBLE_EQ(cs[1].target_loss, 0.5);
  EXPECT_DOUBLE_EQ(cs[2].target_loss, 0.0);
}

TEST(TimeToTarget, BadValuesExitTwoWithOneLineNamingTheFlag) {
  const std::string out = test::tmp("ttt-bad.csv");
  for (const std::string v : {"abc", "-1", "nan", "inf", "0.5x", "''"}) {
    const test::ShellResult r =
        test::trainbench("run --samples 100 --batch 10 --epochs 1 --reps 1 --target-loss " + v + " --out " + out);
    EXPECT_EQ(r.code, 2) << v << ": " << r.out;
    EXPECT_NE(r.out.find("--target-loss: invalid value"), std::string::npos) << v << ": " << r.out;
    EXPECT_NE(r.out.find("expected a finite number >= 0"), std::string::npos) << v << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << v << ": " << r.out;
    EXPECT_FALSE(std::filesystem::exists(out)) << v;
  }
}

}  // namespace
}  // namespace tb
