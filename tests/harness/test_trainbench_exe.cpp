// tests/harness/test_trainbench_exe.cpp — the `trainbench` executable end to end:
// rows written, exit codes (0 ok, 1 a run failed, 2 bad input), nothing written
// on bad input, existing results kept intact, a diverging run recorded as failed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "harness/mpi_launch.h"
#include "tests/csv_rows.h"
#include "tests/json_file.h"
#include "tests/shell.h"

namespace {

namespace fs = std::filesystem;
using Result = tb::test::ShellResult;
const auto& run = tb::test::trainbench;

using tb::test::tmp;  // tests/shell.h

std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> v;
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

const char* kSmall = "--model linear --layers 8,1 --samples 300 --batch 64 --epochs 2 --warmup 1 --reps 3";

TEST(TrainbenchExe, RunWritesOneRowPerRepetitionAndEnvJson) {
  const std::string out = tmp("run1.csv");
  const Result r = run(std::string("run --backend cpu-omp --threads 2 ") + kSmall + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto l = lines(out);
  ASSERT_EQ(l.size(), 4u);  // header + 3 repetitions
  EXPECT_EQ(l[0].rfind("schema_version,run_id,timestamp,host,workload,backend", 0), 0u);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_NE(l[i].find(",cpu-omp,linear,"), std::string::npos) << l[i];
    EXPECT_EQ(l[i].substr(l[i].size() - 3), ",ok") << l[i];
  }
  EXPECT_TRUE(fs::exists(out + ".env.json"));
  std::ifstream env(out + ".env.json");
  std::stringstream ss;
  ss << env.rdbuf();
  for (const char* key : {"\"git\"", "\"command_line\"", "\"compiler\"", "\"cpu_model\"", "\"openmp\"", "\"seed\": 1",
                          "\"driver\"", "\"cuda_runtime\"", "\"cublas\"", "\"nccl_runtime\"", "\"cuda_visible_devices\"",
                          "\"gpus\"", "\"peer_access\"", "\"gpu_unavailable_reason\""}) {
    EXPECT_NE(ss.str().find(key), std::string::npos) << key;
  }
}

TEST(TrainbenchExe, RepetitionsOfTheSameRunAgreeAndAppendKeepsEarlierRows) {
  const std::string out = tmp("run2.csv");
  ASSERT_EQ(run(std::string("run --backend reference ") + kSmall + " --out " + out).code, 0);
  ASSERT_EQ(run(std::string("run --backend cpu-omp --threads 1 ") + kSmall + " --out " + out).code, 0);
  const auto l = lines(out);
  ASSERT_EQ(l.size(), 7u);  // one header, 3 + 3 rows
  // Every repetition of one backend has the same final loss; columns found by header name.
  auto col = [&](const std::string& line, const std::string& name) {
    std::vector<std::string> f;
    std::string cur;
    bool q = false;
    for (char ch : line) {
      if (ch == '"') q = !q;
      else if (ch == ',' && !q) { f.push_back(cur); cur.clear(); }
      else cur += ch;
    }
    f.push_back(cur);
    const std::string& h = l[0];
    int k = 0;
    for (size_t p = 0, q; (q = h.find(',', p)) != std::string::npos || p < h.size(); p = q + 1, ++k) {
      if (h.substr(p, q == std::string::npos ? std::string::npos : q - p) == name) return f.at(k);
      if (q == std::string::npos) break;
    }
    ADD_FAILURE() << "no column " << name;
    return std::string();
  };
  EXPECT_EQ(col(l[1], "final_loss"), col(l[3], "final_loss"));
  const double ref = std::stod(col(l[1], "final_loss")), omp = std::stod(col(l[4], "final_loss"));
  EXPECT_NEAR(omp, ref, 1e-4 * ref);
  EXPECT_EQ(col(l[1], "precision"), "fp64");
  EXPECT_EQ(col(l[4], "precision"), "fp32");
}

TEST(TrainbenchExe, BadInputExitsTwoWithOneLineAndWritesNothing) {
  const std::string out = tmp("bad.csv");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--backend nope", "--backend"}, {"--model cnn", "--model"},     {"--samples 0", "--samples"},
      {"--batch x", "--batch"},        {"--layers 8", "--layers"},     {"--lr -1", "--lr"},
      {"--threads 0", "--threads"},    {"--frobnicate", "--frobnicate"},
      {"--samples 10 --batch 20", "--batch"},
      {"--dataset csv:/no/such/file.csv --layers 3,1", "/no/such/file.csv"},
  };
  for (const auto& [args, flag] : cases) {
    const Result r = run("run " + args + " --out " + out);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(flag), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
    EXPECT_FALSE(fs::exists(out)) << args;
  }
  EXPECT_EQ(run("frob").code, 2);
  EXPECT_EQ(run("run --out /nonexistent-dir/x.csv --samples 100 --batch 10").code, 2);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Appending to a results file replaced its env.json with the new run's: the earlier rows
// lost their environment. The file's env.json is kept and lists the run appended (with the
// settings it chose through the environment); a run of another build or machine, or onto
// an env.json that cannot be read, is refused: exit 2, nothing written.
TEST(TrainbenchExe, AppendingKeepsTheEarlierRowsEnvJsonAndListsTheRunAppended) {
  using nlohmann::json;
  const std::string out = tmp("env-append.csv"), env = out + ".env.json";
  ASSERT_EQ(run(std::string("run --backend reference --no-ceilings ") + kSmall + " --out " + out).code, 0);
  const json first = tb::test::read_json_file(env);
  const Result second = tb::test::shell("OMP_PROC_BIND=close " + std::string(TB_TRAINBENCH_EXE) +
                                        " run --backend cpu-omp --threads 1 --no-ceilings " + kSmall + " --out " + out);
  ASSERT_EQ(second.code, 0) << second.out;
  json kept = tb::test::read_json_file(env);
  ASSERT_TRUE(kept.contains("appended_runs")) << kept.dump(1);
  ASSERT_EQ(kept["appended_runs"].size(), 1u);
  const json added = kept["appended_runs"][0];
  kept.erase("appended_runs");
  EXPECT_EQ(kept, first) << "the earlier rows' env.json is kept as it was";
  const auto rows = tb::test::csv_rows(out);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].at("run_id"), first["run_id"].get<std::string>());
  EXPECT_EQ(rows[5].at("run_id"), added["run_id"].get<std::string>());
  EXPECT_NE(added["run_id"], first["run_id"]);
  EXPECT_NE(added["command_line"].get<std::string>().find("--backend cpu-omp"), std::string::npos) << added.dump(1);
  EXPECT_EQ(added["openmp"]["proc_bind"], "close");
  EXPECT_EQ(added["seed"], 1);

  // Rows of another build (here: another commit): this run is refused before training.
  json other = tb::test::read_json_file(env);
  other["git"]["commit"] = "0000000000000000000000000000000000000000";
  std::ofstream(env) << other.dump(2);
  const std::string rows_before = slurp(out), env_before = slurp(env);
  Result r = run(std::string("run --backend cpu-omp --threads 1 --no-ceilings ") + kSmall + " --out " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--out: cannot append to " + out + ": " + env + ", the environment of its rows, differs from "
                       "this run's (git.commit: '0000000000000000000000000000000000000000' then, '"),
            std::string::npos) << r.out;
  EXPECT_EQ(slurp(out), rows_before);
  EXPECT_EQ(slurp(env), env_before);
  std::ofstream(env) << "{\"run_id\": ";  // cut short
  r = run(std::string("run --backend cpu-omp --threads 1 --no-ceilings ") + kSmall + " --out " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(env + ", the environment of its rows, cannot be read"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(out), rows_before);
}

// Runs started at once with one --out: each found no file and wrote env.json as the
// only run, the last replacing the others' (15 rows, one run described). They now take
// turns at setting up the file (folder_lock.h): one starts it, the others append.
TEST(TrainbenchExe, RunsStartedAtOnceOnOneFileAreEveryOneDescribedInItsEnvJson) {
  using nlohmann::json;
  const std::string out = tmp("at-once.csv"), env = out + ".env.json";
  constexpr int kRuns = 4;
  std::string cmd;
  for (int i = 0; i < kRuns; ++i) {
    cmd += std::string(TB_TRAINBENCH_EXE) + " run --backend cpu-omp --threads 1 " + kSmall + " --out " + out +
           " > /dev/null & ";
  }
  const Result r = tb::test::shell(cmd + "wait");  // each run's rows (3, all ok) are checked below
  ASSERT_EQ(r.code, 0) << r.out;
  const auto rows = tb::test::csv_rows(out);
  ASSERT_EQ(rows.size(), 3u * kRuns);
  std::set<std::string> in_rows, described;
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "ok");
    in_rows.insert(row.at("run_id"));
  }
  const json e = tb::test::read_json_file(env);
  described.insert(e["run_id"].get<std::string>());
  if (e.contains("appended_runs")) {
    for (const json& a : e["appended_runs"]) described.insert(a["run_id"].get<std::string>());
  }
  EXPECT_EQ(in_rows.size(), static_cast<size_t>(kRuns));
  EXPECT_EQ(described, in_rows) << e.dump(1);
}

// Ctrl-C while another run holds the folder's setup lock ends the run at once (130),
// with nothing written; it waited for the holder to let go (here 20 s).
TEST(TrainbenchExe, ARunWaitingForItsFolderEndsAtOnceOnSigint) {
  if (tb::test::shell("command -v flock").code != 0) GTEST_SKIP() << "no flock(1) (util-linux) to hold the folder";
  const std::string dir = tmp("held-folder");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Result r = tb::test::shell(
      "flock " + dir + " sleep 20 > /dev/null 2>&1 & sleep 0.5; " + std::string(TB_TRAINBENCH_EXE) +
      " run --backend cpu-omp " + kSmall + " --out " + dir + "/a.csv & p=$!; sleep 1; t0=$(date +%s.%N); kill -INT $p; wait $p; rc=$?; "
      "echo \"rc=$rc after=$(awk \"BEGIN { print $(date +%s.%N) - $t0 }\")\"");
  EXPECT_NE(r.out.find("rc=130 "), std::string::npos) << r.out;
  const size_t at = r.out.find("after=");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_LT(std::stod(r.out.substr(at + 6)), 10.0) << "waited for the holder\n" << r.out;
  EXPECT_FALSE(fs::exists(dir + "/a.csv")) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/a.csv.env.json")) << r.out;
}

TEST(TrainbenchExe, AppendingToAFileWithAnotherHeaderIsRefused) {
  const std::string out = tmp("other.csv");
  std::ofstream(out) << "a,b\n1,2\n";
  const Result r = run(std::string("run ") + kSmall + " --out " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("different header"), std::string::npos);
  EXPECT_EQ(lines(out), (std::vector<std::string>{"a,b", "1,2"}));
}

TEST(TrainbenchExe, DivergingRunIsAFailedRowAndExitOne) {
  const std::string out = tmp("nan.csv");
  const Result r = run("run --backend cpu-omp --model linear --layers 8,1 --samples 256 --batch 32 --epochs 3 "
                       "--warmup 0 --lr 1e6 --out " + out);
  EXPECT_EQ(r.code, 1) << r.out;
  const auto l = lines(out);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_NE(l[1].find("failed: non-finite loss at epoch 1 step "), std::string::npos) << l[1];
}

TEST(TrainbenchExe, BackendsListsEveryBackendWithAReason) {
  const Result r = run("backends");
  EXPECT_EQ(r.code, 0);
  for (const char* b : {"reference", "cpu-omp", "cuda", "cuda-dp", "cuda-ddp", "cpu-ddp"}) {
    EXPECT_NE(r.out.find(b), std::string::npos) << b;
  }
  // One column per field: every status starts where the longest name (cpu-hogwild) ends + 1.
  EXPECT_NE(r.out.find("cpu-omp     available"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu-hogwild available"), std::string::npos) << r.out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    EXPECT_EQ(line.find_first_not_of(' ', line.find(' ')), std::string("cpu-hogwild ").size()) << line;
  }
}

TEST(TrainbenchExe, DevicesDescribesTheCpu) {
  const Result r = run("devices");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("logical cores"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpus"), std::string::npos) << r.out;
}

// The suite's launcher line, for scripts: the same words mpirun_prefix gives the suite.
TEST(TrainbenchExe, LauncherPrintsTheSuitesLineAndRefusesABadCount) {
  Result r = run("launcher 3");
  EXPECT_EQ(r.code, 0) << r.out;
  std::string want;
  for (const std::string& w : tb::mpirun_prefix(3)) want += (want.empty() ? "" : " ") + w;
  EXPECT_EQ(r.out, want + "\n");
  EXPECT_NE(r.out.find(" -np 3 "), std::string::npos) << r.out;
  for (const char* bad : {"launcher 0", "launcher x", "launcher", "launcher 2 3", "launcher 4097"}) {
    r = run(bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("launcher: N: expected one integer in [1, 4096]"), std::string::npos) << r.out;
  }
}

TEST(TrainbenchExe, QuickSuiteWritesResultsCurvesEnvAndLog) {
  const std::string dir = tmp("suite-quick");
  const Result r = run(std::string("suite ") + TB_SOURCE_DIR + "/bench/suites/quick.suite --out " + dir);
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* f : {"results.csv", "curves.csv", "env.json", "log.txt"}) {
    EXPECT_TRUE(fs::exists(fs::path(dir) / f)) << f;
  }
  const auto rows = lines(dir + "/results.csv");
  ASSERT_GT(rows.size(), 3u);
  bool saw_skipped = false;
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].find("failed"), std::string::npos) << rows[i];
    saw_skipped |= rows[i].find("skipped: ") != std::string::npos;
  }
  EXPECT_TRUE(saw_skipped) << "the quick suite names an unavailable backend; it must be recorded as skipped";
  EXPECT_NE(r.out.find("matches reference"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" NO ("), std::string::npos) << r.out;
  EXPECT_GT(lines(dir + "/curves.csv").size(), 1u);
}

TEST(TrainbenchExe, SuiteGoesOnAfterAFailedConfigurationAndExitsOne) {
  const std::string dir = tmp("suite-fail");
  const std::string suite = tmp("fail.suite");
  std::ofstream(suite) << "defaults: --epochs 1 --warmup 0 --reps 1 --samples 128 --batch 32\n"
                          "diverges: --model linear --layers 4,1 --lr 1e7 --backends cpu-omp --threads 1\n"
                          "fine: --model linear --layers 4,1 --lr 0.01 --backends cpu-omp --threads 1\n";
  const Result r = run("suite " + suite + " --out " + dir);
  EXPECT_EQ(r.code, 1) << r.out;
  const auto rows = lines(dir + "/results.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_NE(rows[1].find("failed: non-finite loss"), std::string::npos) << rows[1];
  EXPECT_NE(rows[2].find(",ok"), std::string::npos) << rows[2];
}

}  // namespace

namespace {

TEST(TrainbenchExe, EveryCommandHasHelpAndRejectsStrayArguments) {
  for (const char* cmd : {"run", "suite", "backends", "devices"}) {
    const Result r = run(std::string(cmd) + " --help");
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("usage: trainbench"), std::string::npos) << cmd << ": " << r.out;
  }
  EXPECT_NE(run("run --help").out.find("--batch B"), std::string::npos);
  EXPECT_EQ(run("backends extra").code, 2);
  EXPECT_EQ(run("devices --bogus").code, 2);
  EXPECT_EQ(run("suite").code, 2);
  // Stray arguments after version were ignored (exit 0).
  for (const char* stray : {"version --x", "version extra", "--version --x"}) {
    const Result r = run(stray);
    EXPECT_EQ(r.code, 2) << stray << ": " << r.out;
    EXPECT_NE(r.out.find("unknown argument"), std::string::npos) << stray << ": " << r.out;
    EXPECT_EQ(r.out.find("trainbench 0"), std::string::npos) << stray << ": " << r.out;
  }
  EXPECT_EQ(run("version").code, 0);
  EXPECT_EQ(run("version --help").code, 0);
  // `help COMMAND` is `COMMAND --help`, and the command list names it.
  const Result help_run = run("help run");
  EXPECT_EQ(help_run.code, 0) << help_run.out;
  EXPECT_EQ(help_run.out, run("run --help").out);
  const Result list = run("help");
  EXPECT_EQ(list.code, 0) << list.out;
  EXPECT_NE(list.out.find("\n  help      this list; `trainbench help COMMAND`"), std::string::npos) << list.out;
  // `help help` named itself an unknown command (exit 2) while listing it as allowed.
  for (const char* about_help : {"help help", "help --help", "help -h"}) {
    const Result r = run(about_help);
    EXPECT_EQ(r.code, 0) << about_help << ": " << r.out;
    EXPECT_EQ(r.out, list.out) << about_help;
  }
  const Result unknown = run("help frob");
  EXPECT_EQ(unknown.code, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("unknown command 'frob' (allowed: run, suite, export, backends, devices, launcher, "
                             "schema, version, help)"),
            std::string::npos)
      << unknown.out;
  // A folder given for the suite file said "no entries"; say what it is (and write nothing).
  const std::string dir = tmp("a-folder"), out = tmp("a-folder-run");
  fs::create_directories(dir);
  const Result r = run("suite " + dir + " --out " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(dir + ": is a directory (expected a .suite file"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(TrainbenchExe, BadDatasetFilesExitTwoNamingFileAndPlaceAndWriteNothing) {
  const std::string ragged = tmp("ragged.csv"), idx_img = tmp("bad-images.idx"), idx_lab = tmp("labels.idx");
  write_file(ragged, "a,b,y\n1,2,3\n4,5\n");
  write_file(idx_img, std::string("\x00\x00\x08\x02\x00\x00\x00\x01", 8));  // labels magic in an images file
  write_file(idx_lab, std::string("\x00\x00\x08\x01\x00\x00\x00\x01\x03", 9));
  const std::string good = tmp("good.csv");
  write_file(good, "a,b,label\n1,2,0\n3,4,1\n5,6,0\n");
  const std::string out = tmp("baddata.csv");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--dataset csv:" + ragged + " --layers 2,1 --batch 1", ragged + ":3"},
      {"--dataset idx:" + idx_img + "," + idx_lab + " --model mlp --layers 4,8,10 --batch 1", "byte 0"},
      {"--dataset csv:" + good + " --task classification --layers 2,1 --batch 1", "--layers"},
      {"--dataset csv:" + good + " --layers 3,1 --batch 1", "--layers"},
      {"--dataset csv:" + good + " --layers 2,1 --batch 4", "--batch"},
      {"--dataset csv:" + good + " --layers 2,1 --samples 2 --batch 1", "--samples"},
  };
  for (const auto& [args, must] : cases) {
    const Result r = run("run " + args + " --out " + out);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(must), std::string::npos) << args << ": " << r.out;
    EXPECT_FALSE(fs::exists(out)) << args;
  }
  // The good file trains (classification with 2 classes).
  const Result ok = run("run --dataset csv:" + good + " --task classification --layers 2,2 --batch 2 --out " + out);
  EXPECT_EQ(ok.code, 0) << ok.out;
}

TEST(TrainbenchExe, BadSuiteLineOrDatasetExitsTwoAndWritesNoFolder) {
  const std::string dir = tmp("suite-bad");
  const std::string suite = tmp("bad.suite");
  std::ofstream(suite) << "ok: --model linear --layers 4,1 --samples 64 --batch 8\n"
                          "bad: --model linear --layers 4,1 --samples 64 --batch 0\n";
  Result r = run("suite " + suite + " --out " + dir);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("bad.suite:2: --batch"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir));
  std::ofstream(suite) << "f: --model linear --layers 4,1 --dataset csv:/no/such.csv --batch 8\n";
  r = run("suite " + suite + " --out " + dir);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("/no/such.csv"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir));
  // Quoting (run_peers.py would read these words otherwise): one line, nothing written.
  std::ofstream(suite) << "ok: --model linear --layers 4,1 --samples 64 --batch 8\n"
                          "q: --model linear --layers 4,1 --samples 64 --batch 8 --seed '2'\n";
  r = run("suite " + suite + " --out " + dir);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("bad.suite:2: quoting is not supported (found ')"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_FALSE(fs::exists(dir));
}

// --dry-run: the checks a suite makes before it writes, then the list of what would run;
// nothing is created (make perf asks it before its first measurement).
TEST(TrainbenchExe, SuiteDryRunListsEveryConfigurationAndWritesNothing) {
  const std::string dir = tmp("suite-dry");
  const std::string suite = tmp("dry.suite");
  std::ofstream(suite) << "defaults: --model linear --layers 4,1 --samples 64 --batch 8 --reps 2\n"
                          "a: --backends reference,cpu-omp --threads 1,2\n"
                          "b: --backends cpu-omp --shuffle --bucket-mb 1 --threads 1\n";
  Result r = run("suite " + suite + " --dry-run --out " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(fs::exists(dir));
  // reference has no threads knob: one row; cpu-omp at 1 and 2 threads; b is skipped.
  EXPECT_NE(r.out.find("[1/4] a reference threads=1 world_size=1 reps=2: runs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[3/4] a cpu-omp threads=2 world_size=1 reps=2: runs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[4/4] b cpu-omp threads=1 world_size=1 reps=2: skipped: --bucket-mb does not apply to cpu-omp"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("4 configurations: 3 run, 1 skipped"), std::string::npos) << r.out;
  // Bad input is found as the suite would find it: exit 2, still nothing written.
  std::ofstream(suite) << "bad: --model linear --layers 4,1 --samples 64 --batch 0\n";
  r = run("suite " + suite + " --dry-run --out " + dir);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("dry.suite:1: --batch"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir));
  // A folder that holds a run already is refused before anything is measured.
  fs::create_directories(dir);
  std::ofstream(dir + "/results.csv") << "x\n";
  std::ofstream(suite) << "a: --model linear --layers 4,1 --samples 64 --batch 8\n";
  r = run("suite " + suite + " --dry-run --out " + dir);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("already holds the results of another run"), std::string::npos) << r.out;
}

// Diverged while finite: the loss ends above where it started (lr far too large). Both
// backends say so; the float32 range check alone let 1.3e19 through as ok.
TEST(TrainbenchExe, ARunWhoseLossEndsAboveItsStartIsFailedDiverged) {
  for (const char* backend : {"cpu-omp", "reference"}) {
    const std::string out = tmp(std::string("finite-div-") + backend + ".csv");
    const Result r = run(std::string("run --backend ") + backend + " --model linear --layers 16,1 --samples 2000 "
                         "--batch 128 --lr 1.5 --epochs 2 --warmup 0 --reps 2 --out " + out);
    EXPECT_EQ(r.code, 1) << backend << ": " << r.out;
    const auto l = lines(out);
    ASSERT_EQ(l.size(), 2u) << backend;
    EXPECT_NE(l[1].find("failed: diverged: final loss "), std::string::npos) << l[1];
    EXPECT_NE(l[1].find("is over twice the loss before training"), std::string::npos) << l[1];
  }
  // The same model at a sane rate trains: not failed.
  const std::string ok = tmp("finite-ok.csv");
  const Result r = run("run --backend cpu-omp --model linear --layers 16,1 --samples 2000 --batch 128 --lr 0.05 "
                       "--epochs 2 --warmup 0 --reps 1 --out " + ok);
  EXPECT_EQ(r.code, 0) << r.out;
}

// A failure in a later repetition is that repetition's row (it said 0 before), after the
// earlier repetitions' ok rows. cpu-hogwild takes injected faults: a NaN loss from step 5
// on, the second repetition's first step (4 steps an epoch, one epoch, no warm-up).
TEST(TrainbenchExe, AFailedRowCarriesTheRepetitionItFailedIn) {
  const std::string out = tmp("rep-fail.csv");
  const Result r = tb::test::shell("TB_FAULT=rank=0,step=5,kind=nan " + std::string(TB_TRAINBENCH_EXE) +
                                   " run --backend cpu-hogwild --workers 1 --model linear --layers 8,1 --samples 64 "
                                   "--batch 16 --epochs 1 --warmup 0 --reps 3 --out " + out);
  EXPECT_EQ(r.code, 1) << r.out;
  const auto l = lines(out);
  ASSERT_EQ(l.size(), 3u) << r.out;
  EXPECT_EQ(l[1].substr(l[1].size() - 3), ",ok") << l[1];
  EXPECT_NE(l[2].find("failed: non-finite loss"), std::string::npos) << l[2];
  const auto rows = tb::test::csv_rows(out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("repetition"), "0");
  EXPECT_EQ(rows[1].at("repetition"), "1") << l[2];
}

TEST(TrainbenchExe, ADivergedReferenceRunIsFailedNotOk) {
  const std::string out = tmp("refdiv.csv");
  const Result r = run("run --backend reference --model linear --layers 8,1 --samples 256 --batch 32 --epochs 3 "
                       "--warmup 0 --reps 1 --lr 1e6 --out " + out);
  EXPECT_EQ(r.code, 1) << r.out;
  const auto l = lines(out);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_NE(l[1].find("failed: "), std::string::npos) << l[1];
}

TEST(TrainbenchExe, ProgressIsDrawnOnATerminalAndSilentInCi) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "util-linux `script` not installed";
  // A container without /dev/ptmx (or devpts) cannot make a pseudo-terminal: nothing to test there.
  const int pty = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (pty < 0) GTEST_SKIP() << "no pseudo-terminal can be made here: posix_openpt: " << std::strerror(errno);
  const bool usable = ::grantpt(pty) == 0 && ::unlockpt(pty) == 0 && ::ptsname(pty) != nullptr;
  const std::string why = usable ? "" : std::strerror(errno);
  ::close(pty);
  if (!usable) GTEST_SKIP() << "no pseudo-terminal can be made here: " << why;
  const Result probe = tb::test::shell("script -qec true /dev/null");
  if (probe.code != 0) GTEST_SKIP() << "`script` cannot run a command on a pseudo-terminal here: " << probe.out;
  const std::string cmd = std::string(TB_TRAINBENCH_EXE) +
                          " run --model linear --layers 8,1 --samples 20000 --batch 16 --epochs 2 --reps 1 "
                          "--warmup 0 --out " + tmp("progress.csv");
  // `script` gives the command a pseudo-terminal; CI must be unset for the tty case.
  Result tty;
  FILE* p = ::popen(("env -u CI script -qec '" + cmd + "' /dev/null 2>&1").c_str(), "r");
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) tty.out.append(buf.data(), n);
  ::pclose(p);
  EXPECT_NE(tty.out.find("ETA"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("epoch "), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("loss "), std::string::npos) << tty.out;
  const Result piped = run("run --model linear --layers 8,1 --samples 2000 --batch 16 --epochs 1 --reps 1 --warmup 0");
  EXPECT_EQ(piped.out.find("ETA"), std::string::npos) << piped.out;
  EXPECT_EQ(piped.out.find('\r'), std::string::npos);
}

}  // namespace
