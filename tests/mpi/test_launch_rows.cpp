// tests/mpi/test_launch_rows.cpp — rows of jobs started by mpirun say what ran: a
// skipped multi-process row carries the job's world size (not 1) and names no GPU;
// a single-process backend started as several ranks is refused (exit 2), so one
// configuration never writes several runs' rows under one run id.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/backend.h"
#include "harness/csv_writer.h"
#include "harness/result_row.h"
#include "tests/shell.h"

namespace {

namespace fs = std::filesystem;

using tb::test::tmp;  // tests/shell.h

std::string field(const std::string& row, const char* name) {
  const std::vector<std::string> h = tb::results_header();
  const std::vector<std::string> f = tb::csv_fields(row);
  for (size_t i = 0; i < h.size() && i < f.size(); ++i) {
    if (h[i] == name) return f[i];
  }
  return "<no column " + std::string(name) + ">";
}

TEST(LaunchRows, ASkippedMultiProcessRowCarriesTheJobsWorldSize) {
  // cuda-ddp with a knob it does not honour is skipped on every machine.
  const std::string out = tmp("skip-ws.csv");
  const tb::test::ShellResult r =
      tb::test::shell(tb::test::mpirun(2) + TB_TRAINBENCH_EXE +
                      " run --backend cuda-ddp --cuda-graph --model linear --layers 4,1 --samples 64 --batch 16 --out " +
                      out);
  EXPECT_EQ(r.code, 0) << r.out;
  std::ifstream in(out);
  std::string header, row, extra;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_FALSE(std::getline(in, extra)) << "one row (rank 0 writes)";
  EXPECT_EQ(field(row, "world_size"), "2") << row;
  EXPECT_EQ(field(row, "devices"), "") << row;
  EXPECT_EQ(field(row, "status").rfind("skipped: --cuda-graph does not apply to cuda-ddp", 0), 0u) << row;
}

TEST(LaunchRows, ASingleProcessBackendUnderMpirunIsRefused) {
  const std::string out = tmp("omp-np2.csv");
  const tb::test::ShellResult r = tb::test::shell(tb::test::mpirun(2) + TB_TRAINBENCH_EXE +
                                                  " run --backend cpu-omp --samples 64 --batch 16 --out " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--backend cpu-omp: a single-process backend started as 2 processes"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace

namespace {

// env.json names the MPI library (not the standard's version), the build-time commit and
// every node's host record, gathered over the job (one host here: the ranks share it).
TEST(LaunchRows, EnvJsonNamesTheMpiLibraryAndEveryNodesHost) {
  const std::string out = tmp("env-np2.csv");
  const tb::test::ShellResult r =
      tb::test::shell(tb::test::mpirun(2) + TB_TRAINBENCH_EXE +
                      " run --backend cpu-ddp --model linear --layers 4,1 --samples 64 --batch 16 --epochs 1 "
                      "--reps 1 --threads 1 --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(out + ".env.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string env = ss.str();
  const bool known_mpi = env.find("\"mpi\": \"Open MPI ") != std::string::npos ||
                         env.find("\"mpi\": \"MPICH ") != std::string::npos;
  EXPECT_TRUE(known_mpi) << env;
  EXPECT_NE(env.find("\"captured\": \"at build time\""), std::string::npos) << env;
  EXPECT_NE(env.find("\"hosts\": ["), std::string::npos) << env;
  EXPECT_NE(env.find("\"topology\""), std::string::npos) << env;
  EXPECT_NE(env.find("\"cpu_frequency\""), std::string::npos) << env;
}

}  // namespace
