// tests/harness/test_mpi_launch.cpp — the launcher line the suite puts in front of a
// multi-process run (harness/mpi_launch.h): mpirun with the MPI library's own one-node
// flags by default (Open MPI's; none for MPICH), srun with -n, the PMI plugin the library
// speaks and --kill-on-bad-exit, TB_MPIRUN_FLAGS replacing the flags.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/job.h"
#include "harness/mpi_launch.h"
#include "harness/mpi_library.h"

namespace tb {
namespace {

// Sets (or, with nullptr, unsets) an environment variable for one test, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1);
    else unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

bool contains(const std::vector<std::string>& v, const std::string& w) {
  for (const std::string& x : v)
    if (x == w) return true;
  return false;
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> v;
  for (std::string w; in >> w;) v.push_back(w);
  return v;
}

TEST(MpiLaunch, MpirunGetsNpAndTheLibrarysOneNodeFlags) {
  ScopedEnv exe("TB_MPIRUN", "mpirun"), flags("TB_MPIRUN_FLAGS", nullptr);
  const std::vector<std::string> v = mpirun_prefix(3);
  ASSERT_GE(v.size(), 3u);
  EXPECT_EQ(v[0], "mpirun");
  EXPECT_EQ(v[1], "-np");
  EXPECT_EQ(v[2], "3");
  EXPECT_EQ(std::vector<std::string>(v.begin() + 3, v.end()), words(mpi_launcher_flags()));
  if (mpi_flavour() == "openmpi") {
    EXPECT_TRUE(contains(v, "--allow-run-as-root"));
    // Shared memory between ranks: vader until Open MPI 4, sm from 5 (vader is gone
    // there), and 5's spelling of oversubscription.
    const bool v5 = mpi_library().rfind("Open MPI ", 0) == 0 && std::stoi(mpi_library().substr(9)) >= 5;
    EXPECT_TRUE(contains(v, v5 ? ":OVERSUBSCRIBE" : "--oversubscribe")) << mpi_library();
    EXPECT_TRUE(contains(v, v5 ? "self,sm" : "self,vader")) << mpi_library();
  } else {  // MPICH's hydra (and anything else) gets none of Open MPI's flags
    for (const char* w : {"--allow-run-as-root", "--oversubscribe", "--mca", "--bind-to"})
      EXPECT_FALSE(contains(v, w)) << w << " for " << mpi_library();
  }
  EXPECT_FALSE(launch_is_single_node());  // TB_MPIRUN set: ranks may be anywhere
}

TEST(MpiLaunch, SrunGetsDashNThePmiPluginAndKillOnBadExit) {
  const std::string plugin = srun_mpi_plugin();
  if (mpi_flavour() == "openmpi") {
    EXPECT_EQ(plugin, "pmix");
  } else if (mpi_flavour() == "mpich") {
    EXPECT_EQ(plugin, "pmi2");
  }
  for (const char* srun : {"srun", "/usr/bin/srun"}) {
    ScopedEnv exe("TB_MPIRUN", srun), flags("TB_MPIRUN_FLAGS", nullptr);
    std::vector<std::string> want = {srun, "-n", "8"};
    if (!plugin.empty()) want.push_back("--mpi=" + plugin);
    want.push_back("--kill-on-bad-exit=1");
    EXPECT_EQ(mpirun_prefix(8), want) << srun;
  }
}

TEST(MpiLaunch, FlagsFromTheEnvironmentReplaceTheDefaults) {
  ScopedEnv exe("TB_MPIRUN", "srun"), flags("TB_MPIRUN_FLAGS", "--mpi=pmix --gpus-per-task=1");
  EXPECT_EQ(mpirun_prefix(2), (std::vector<std::string>{"srun", "-n", "2", "--mpi=pmix", "--gpus-per-task=1"}));
}

TEST(MpiLaunch, ALauncherThatCannotStartIsNamedWithWhy) {
  ScopedEnv flags("TB_MPIRUN_FLAGS", nullptr);
  {
    ScopedEnv exe("TB_MPIRUN", "/bin/sh");
    EXPECT_EQ(launcher_problem(), "");
  }
  {
    ScopedEnv exe("TB_MPIRUN", "sh");  // found on PATH
    EXPECT_EQ(launcher_problem(), "");
  }
  {
    // Words: the suite runs TB_MPIRUN as one program, so flags belong in TB_MPIRUN_FLAGS.
    ScopedEnv exe("TB_MPIRUN", "mpirun --oversubscribe");
    EXPECT_NE(launcher_problem().find("TB_MPIRUN='mpirun --oversubscribe' is not one program"), std::string::npos)
        << launcher_problem();
  }
  {
    ScopedEnv exe("TB_MPIRUN", "tb-no-such-launcher");
    EXPECT_NE(launcher_problem().find("TB_MPIRUN='tb-no-such-launcher' is not found on PATH"), std::string::npos)
        << launcher_problem();
  }
  {
    const std::string data = std::string(TB_TEST_TMPDIR) + "/not-a-launcher.txt";
    std::ofstream(data) << "data\n";  // a file without execute permission
    ScopedEnv exe("TB_MPIRUN", data.c_str());
    EXPECT_NE(launcher_problem().find("' is not an executable file"), std::string::npos) << launcher_problem();
  }
}

// Ranks are counted from the launcher's variables; an sbatch script is one process
// although it carries the allocation's SLURM_NTASKS and SLURM_PROCID=0 (it was refused
// as "a single-process backend started as 2 processes"); an srun step's tasks count.
TEST(MpiLaunch, AnSbatchScriptIsOneProcessAnSrunStepIsItsTasks) {
  ScopedEnv a("OMPI_COMM_WORLD_SIZE", nullptr), b("PMI_SIZE", nullptr), c("PMIX_SIZE", nullptr),
      d("MPI_LOCALNRANKS", nullptr), e("OMPI_COMM_WORLD_RANK", nullptr), f("PMI_RANK", nullptr),
      g("PMIX_RANK", nullptr), h("SLURM_STEP_NUM_TASKS", nullptr);
  ScopedEnv procid("SLURM_PROCID", "0"), ntasks("SLURM_NTASKS", "4");
  EXPECT_EQ(launcher_world_size(), 1);
  EXPECT_EQ(launcher_rank(), 0);
  {
    ScopedEnv step("SLURM_STEP_NUM_TASKS", "3"), rank("SLURM_PROCID", "2");
    EXPECT_EQ(launcher_world_size(), 3);
    EXPECT_EQ(launcher_rank(), 2);
  }
  {
    ScopedEnv size("OMPI_COMM_WORLD_SIZE", "2"), rank("OMPI_COMM_WORLD_RANK", "1");
    EXPECT_EQ(launcher_world_size(), 2);
    EXPECT_EQ(launcher_rank(), 1);
  }
}

}  // namespace
}  // namespace tb
