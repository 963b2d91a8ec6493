// tests/harness/test_cli.cpp — every bad flag value is one UsageError naming the
// flag and what is allowed; good values land in the configuration.
#include <gtest/gtest.h>

#include "harness/cli.h"
#include "harness/suite.h"

#include <filesystem>
#include <fstream>
#include <utility>
#include <set>

namespace tb {
namespace {

RunFlags parse(std::vector<std::string> args) {
  RunFlags f;
  parse_run_flags(args, false, &f);
  validate_run_flags(&f);
  return f;
}

// Writes TEXT to the suite file NAME (under the tests' scratch folder) and expects
// parse_suite to refuse it with a UsageError containing must_contain.
void expect_suite_error(const std::string& name, const std::string& text, const std::string& must_contain) {
  const std::string p = std::string(TB_TEST_TMPDIR) + "/" + name;
  std::ofstream(p) << text;
  try {
    parse_suite(p);
    ADD_FAILURE() << "no error for " << text;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(must_contain), std::string::npos) << e.what();
  }
}

void expect_usage_error(std::vector<std::string> args, const std::string& must_contain) {
  try {
    parse(args);
    FAIL() << "no error for " << ::testing::PrintToString(args);
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(must_contain), std::string::npos)
        << "message '" << e.what() << "' lacks '" << must_contain << "'";
  }
}

TEST(Cli, ParsesAFullRunLine) {
  const RunFlags f = parse({"--backend", "reference", "--model", "mlp", "--layers", "8,16,3", "--samples", "500",
                            "--batch", "50", "--epochs", "4", "--lr=0.1", "--seed", "7", "--threads", "2",
                            "--warmup", "0", "--reps", "2", "--shuffle", "--momentum", "0.9"});
  const RunConfig& c = f.config;
  EXPECT_EQ(c.backend, "reference");
  EXPECT_EQ(c.model.kind, ModelKind::kMlp);
  EXPECT_EQ(c.model.layers, (std::vector<int64_t>{8, 16, 3}));
  EXPECT_EQ(c.data.kind, "synthetic-classification");  // mlp default
  EXPECT_EQ(c.data.n, 500);
  EXPECT_EQ(c.data.d, 8);
  EXPECT_EQ(c.data.seed, 7u);
  EXPECT_EQ(c.batch, 50);
  EXPECT_EQ(c.epochs, 4);
  EXPECT_DOUBLE_EQ(c.lr, 0.1);
  EXPECT_EQ(c.threads, 1);  // reference is serial: --threads does not apply
  EXPECT_EQ(parse({"--backend", "cpu-omp", "--threads", "2"}).config.threads, 2);
  EXPECT_EQ(c.warmup, 0);
  EXPECT_EQ(c.reps, 2);
  EXPECT_TRUE(c.shuffle);
  EXPECT_EQ(c.workload, "mlp-8x16x3-500-b50");
  EXPECT_EQ(c.batches_per_epoch(), 10);
}

TEST(Cli, LastPartialBatchIsKeptUnlessDropLast) {
  RunFlags f = parse({"--samples", "1000", "--batch", "300"});
  EXPECT_EQ(f.config.batches_per_epoch(), 4);
  EXPECT_EQ(f.config.rows_per_epoch(), 1000);
  f = parse({"--samples", "1000", "--batch", "300", "--drop-last"});
  EXPECT_EQ(f.config.batches_per_epoch(), 3);
  EXPECT_EQ(f.config.rows_per_epoch(), 900);
}

TEST(Cli, BadInputNamesTheFlagAndTheAllowedValues) {
  expect_usage_error({"--backend", "tpu"}, "allowed: reference, cpu-omp, cuda");
  expect_usage_error({"--model", "cnn"}, "allowed: linear, mlp");
  expect_usage_error({"--bogus"}, "unknown flag '--bogus'");
  expect_usage_error({"--samples", "0"}, "--samples");
  expect_usage_error({"--samples", "-5"}, "--samples");
  expect_usage_error({"--batch", "abc"}, "--batch: invalid value 'abc'");
  expect_usage_error({"--batch", "12x"}, "--batch");
  expect_usage_error({"--epochs", "0"}, "--epochs");
  expect_usage_error({"--layers", "64"}, "at least 2");
  expect_usage_error({"--layers", "64,0"}, "--layers");
  expect_usage_error({"--model", "linear", "--layers", "4,5,1"}, "exactly two sizes");
  expect_usage_error({"--model", "mlp", "--layers", "4,1"}, "hidden layer");
  expect_usage_error({"--samples", "100", "--batch", "101"}, "--batch: 101 is larger than --samples 100");
  expect_usage_error({"--lr", "0"}, "--lr");
  expect_usage_error({"--lr", "-1"}, "--lr");
  expect_usage_error({"--lr", "nan"}, "--lr");
  expect_usage_error({"--lr", "inf"}, "--lr");
  expect_usage_error({"--threads", "0"}, "--threads");
  // Past INT_MAX: bad input, not a count wrapped to a negative int (found by fuzzing).
  expect_usage_error({"--threads", "2147483648"},
                     "--threads: invalid value '2147483648' (expected all or an integer in [1, 4096])");
  expect_usage_error({"--device", "4294967296"}, "--device");
  expect_usage_error({"--devices", "0,2147483648"}, "--devices");
  expect_usage_error({"--reps", "0"}, "--reps");
  expect_usage_error({"--momentum", "1"}, "[0, 1)");
  expect_usage_error({"--precision", "fp16"}, "allowed: fp32, tf32");
  expect_usage_error({"--dataset", "parquet:x"}, "allowed: synthetic");
  expect_usage_error({"--batch"}, "--batch: missing value");
  expect_usage_error({"--shuffle=1"}, "takes no value");
  expect_usage_error({"--model", "mlp", "--layers", "8,4,1"}, "classification needs at least 2 outputs");
  // A deadline under a second aborted healthy jobs, and said "0 s".
  expect_usage_error({"--comm-timeout", "0.001"}, "--comm-timeout: invalid value '0.001' (expected seconds in [1, 86400])");
  expect_usage_error({"--comm-timeout", "1e9"}, "--comm-timeout");
  EXPECT_DOUBLE_EQ(parse({"--comm-timeout", "1"}).config.comm_timeout_s, 1.0);
}

// Every bad value of a flag gets the flag's one range: --comm-timeout 0 and inf said "a finite
// number > 0" (and 0.5 "[1, 86400]"), --seed 2^63 "an integer >= 0", which it is.
TEST(Cli, ABadValueIsToldTheFlagsWholeRange) {
  for (const char* v : {"0", "0.5", "-1", "inf", "nan", "abc", "86401"}) {
    expect_usage_error({"--comm-timeout", v},
                       std::string("--comm-timeout: invalid value '") + v + "' (expected seconds in [1, 86400])");
  }
  EXPECT_DOUBLE_EQ(parse({"--comm-timeout", "86400"}).config.comm_timeout_s, 86400.0);
  for (const char* v : {"-1", "9223372036854775808", "18446744073709551615", "x"}) {
    expect_usage_error({"--seed", v}, std::string("--seed: invalid value '") + v +
                                          "' (expected an integer in [0, 9223372036854775807])");
  }
  EXPECT_EQ(parse({"--seed", "9223372036854775807"}).config.seed, 9223372036854775807u);
  EXPECT_EQ(parse({"--seed", "0"}).config.seed, 0u);
}

// A value listed twice in a suite's list flag ran one configuration twice.
TEST(Suite, AListFlagNamesEachValueOnce) {
  for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
           {"--backends cpu-ddp --world-sizes 2,2", "--world-sizes: invalid value '2,2' ('2' is listed twice)"},
           {"--threads 1,2,1", "--threads: invalid value '1,2,1' ('1' is listed twice)"},
           {"--backends cpu-omp,reference,cpu-omp", "--backends: invalid value 'cpu-omp,reference,cpu-omp' "
                                                    "('cpu-omp' is listed twice)"},
           {"--backends cpu-hogwild --workers 2,2", "--workers: invalid value '2,2' ('2' is listed twice)"}}) {
    expect_suite_error("dup.suite", "a: --model linear --layers 8,1 --samples 64 --batch 16 " + flags + "\n", message);
  }
}

// No flag is documented as repeatable: the second value used to replace the first in silence.
TEST(Cli, AFlagGivenTwiceIsRefusedNamingIt) {
  expect_usage_error({"--lr", "0.1", "--lr", "0.2"}, "--lr given twice");
  expect_usage_error({"--lr=0.1", "--lr", "0.1"}, "--lr given twice");  // the same value, still a mistake
  expect_usage_error({"--shuffle", "--epochs", "2", "--shuffle"}, "--shuffle given twice");
  RunFlags f;
  EXPECT_THROW(parse_run_flags({"--backends", "cpu-omp", "--backend", "reference"}, true, &f), UsageError);
  // A suite entry overrides its defaults (parsed apart), and one line may not repeat a flag.
  const std::string p = std::string(TB_TEST_TMPDIR) + "/twice.suite";
  std::ofstream(p) << "defaults: --lr 0.05\n"
                      "a: --model linear --layers 8,1 --samples 64 --batch 16 --lr 0.2\n";
  const std::vector<SuiteEntry> e = parse_suite(p);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_DOUBLE_EQ(e[0].flags.config.lr, 0.2);
  expect_suite_error("twice.suite", "a: --model linear --layers 8,1 --samples 64 --batch 16 --epochs 1 --epochs 2\n",
                     "twice.suite:1: --epochs given twice");
}

// Dataset flags that do not apply to the data were ignored in silence.
TEST(Cli, ADatasetFlagThatDoesNotApplyIsRefusedSayingWhy) {
  expect_usage_error({"--task", "classification"}, "--task: applies to csv datasets only (synthetic-regression");
  expect_usage_error({"--dataset", "synthetic-classification", "--layers", "8,3", "--task", "regression"},
                     "--task: applies to csv datasets only");
  expect_usage_error({"--dataset", "idx:a,b", "--layers", "784,10", "--task", "regression"},
                     "(idx data is classification");
  expect_usage_error({"--target", "y"}, "--target: applies to csv datasets only");
  expect_usage_error({"--dataset", "idx:a,b", "--layers", "784,10", "--target", "y"}, "--target: applies to csv");
  expect_usage_error({"--dataset", "csv:x.csv", "--noise", "0.5"},
                     "--noise: applies to synthetic regression data only (this run's data is csv");
  expect_usage_error({"--model", "mlp", "--noise", "0.5"}, "synthetic-classification, whose labels carry no noise");
  // Where they apply, they are taken.
  EXPECT_FLOAT_EQ(parse({"--noise", "0.5"}).config.data.noise, 0.5f);
  const RunFlags csv =
      parse({"--dataset", "csv:x.csv", "--layers", "3,4", "--task", "classification", "--target", "y"});
  EXPECT_EQ(csv.config.data.task, Task::kClassification);
  EXPECT_EQ(csv.config.data.target, "y");
}

TEST(Suite, ParsesDefaultsAndExpandsBackendsAndThreads) {
  const std::string p = std::string(TB_TEST_TMPDIR) + "/s1.suite";
  std::ofstream(p) << "# comment line\n"
                      "defaults: --epochs 2 --reps 2 --lr 0.05\n"
                      "\n"
                      "lin: --model linear --layers 8,1 --samples 64 --batch 16 --backends reference,cpu-omp,cuda "
                      "--threads 1,2,all   # trailing comment\n"
                      "defaults: --epochs 1\n"
                      "mlp: --model mlp --layers 8,6,3 --samples 64 --batch 16 --backends cpu-omp --threads 1\n";
  const std::vector<SuiteEntry> e = parse_suite(p);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].flags.config.workload, "lin");
  EXPECT_EQ(e[0].flags.config.epochs, 2);
  EXPECT_DOUBLE_EQ(e[0].flags.config.lr, 0.05);
  EXPECT_EQ(e[1].flags.config.epochs, 1);
  EXPECT_EQ(e[1].flags.config.reps, 2);  // earlier defaults still apply
  const std::vector<RunConfig> c = expand_suite(e);
  // reference x1 thread, cpu-omp x {1, 2, all} (deduplicated), cuda x1, mlp cpu-omp x1
  std::vector<std::string> got;
  for (const RunConfig& r : c) got.push_back(r.workload + "/" + r.backend + "/" + std::to_string(r.threads));
  std::vector<std::string> want = {"lin/reference/1", "lin/cpu-omp/1", "lin/cpu-omp/2"};
  if (hardware_threads() > 2) want.push_back("lin/cpu-omp/" + std::to_string(hardware_threads()));
  want.push_back("lin/cuda/1");
  want.push_back("mlp/cpu-omp/1");
  EXPECT_EQ(got, want);
}

TEST(Suite, BadLineIsReportedWithFileAndLine) {
  expect_suite_error("s2.suite",
                     "a: --model linear --layers 8,1 --samples 64 --batch 16\n"
                     "b: --model linear --layers 8,1 --samples 64 --batch 0\n",
                     "s2.suite:2: --batch");
}

// bench/peers/run_peers.py read suite lines with shell quoting (shlex), trainbench at
// whitespace: `--target "y z"` was one word to one and two to the other. Neither takes
// a quote or backslash now, on any kind of line; in a comment they are still allowed.
TEST(Suite, AQuoteOrBackslashIsRefusedNamingFileAndLine) {
  const std::string ok = "a: --model linear --layers 8,1 --samples 64 --batch 16   # it's \"fine\" here\n";
  for (const std::string bad : {"b: --model linear --layers 8,1 --samples 64 --batch 16 --dataset \"csv:x y.csv\"\n",
                                "b: --model linear --layers 8,1 --samples 64 --batch 16 --seed '3'\n",
                                "b: --model linear --layers 8,1 --samples 64 --batch 16 --seed 3\\ 4\n",
                                "defaults: --lr 0.1\"\n", "include: 'other.suite'\n", "'b': --model linear\n"}) {
    expect_suite_error("quoted.suite", ok + bad, "quoted.suite:2: quoting is not supported (found ");
  }
  const std::string p = std::string(TB_TEST_TMPDIR) + "/quoted.suite";
  std::ofstream(p) << ok;
  EXPECT_EQ(parse_suite(p).size(), 1u);
}

TEST(Suite, IncludeAddsAnotherFilesEntriesWithItsOwnDefaults) {
  const std::string dir = std::string(TB_TEST_TMPDIR) + "/inc";
  std::filesystem::create_directories(dir + "/sub");
  std::ofstream(dir + "/sub/base.suite") << "defaults: --epochs 5\n"
                                             "a: --model linear --layers 8,1 --samples 64 --batch 16\n";
  std::ofstream(dir + "/top.suite") << "defaults: --epochs 2\n"
                                       "include: sub/base.suite   # relative to this file\n"
                                       "b: --model linear --layers 8,1 --samples 64 --batch 16\n";
  const std::vector<SuiteEntry> e = parse_suite(dir + "/top.suite");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].name, "a");
  EXPECT_EQ(e[0].flags.config.epochs, 5);  // the included file's defaults, not the includer's
  EXPECT_EQ(e[0].file, dir + "/sub/base.suite");
  EXPECT_EQ(e[0].line, 2);
  EXPECT_EQ(e[1].name, "b");
  EXPECT_EQ(e[1].flags.config.epochs, 2);

  // Not a regular file: refused at once, never read (/dev/zero would be read forever).
  std::ofstream(dir + "/zero.suite") << "include: /dev/zero\n";
  try {
    parse_suite(dir + "/zero.suite");
    ADD_FAILURE() << "zero.suite: expected UsageError";
  } catch (const UsageError& err) {
    EXPECT_NE(std::string(err.what()).find("zero.suite:1: include: /dev/zero: not a regular file"), std::string::npos)
        << err.what();
  }

  std::ofstream(dir + "/loop.suite") << "include: loop.suite\n";
  std::ofstream(dir + "/missing.suite") << "include: nowhere.suite\n";
  for (const char* bad : {"loop.suite", "missing.suite"}) {
    try {
      parse_suite(dir + "/" + bad);
      ADD_FAILURE() << bad << ": expected UsageError";
    } catch (const UsageError& err) {
      const std::string what = err.what();
      EXPECT_NE(what.find(std::string(bad) + ":1: "), std::string::npos) << what;
      EXPECT_TRUE(what.find("more than 8 levels") != std::string::npos ||
                  what.find("cannot open suite file") != std::string::npos) << what;
    }
  }
}

TEST(Suite, EveryShippedSuiteParses) {
  // gpu.suite never runs in CI (no GPU): at least its lines must be valid here.
  int files = 0;
  for (const auto& f : std::filesystem::directory_iterator(std::string(TB_SOURCE_DIR) + "/bench/suites")) {
    if (f.path().extension() != ".suite") continue;
    ++files;
    std::vector<SuiteEntry> e;
    EXPECT_NO_THROW(e = parse_suite(f.path().string())) << f.path();
    EXPECT_FALSE(expand_suite(e).empty()) << f.path();
  }
  EXPECT_GE(files, 5);
  // The GPU suite brings in the default one: every default workload is in it too.
  const std::string dir = std::string(TB_SOURCE_DIR) + "/bench/suites/";
  std::set<std::string> gpu;
  for (const SuiteEntry& e : parse_suite(dir + "gpu.suite")) gpu.insert(e.name);
  for (const SuiteEntry& e : parse_suite(dir + "default.suite")) EXPECT_TRUE(gpu.count(e.name)) << e.name;
}

}  // namespace
}  // namespace tb
