// tests/harness/test_mpi_launch.cpp — the launcher line the suite puts in front of a
// multi-process run (harness/mpi_launch.h): mpirun with Open MPI's one-node flags by
// default, srun with -n and none of them, TB_MPIRUN_FLAGS replacing the flags.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "harness/mpi_launch.h"

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

TEST(MpiLaunch, MpirunGetsNpAndOpenMpisOneNodeFlags) {
  ScopedEnv exe("TB_MPIRUN", "mpirun"), flags("TB_MPIRUN_FLAGS", nullptr);
  const std::vector<std::string> v = mpirun_prefix(3);
  ASSERT_GE(v.size(), 3u);
  EXPECT_EQ(v[0], "mpirun");
  EXPECT_EQ(v[1], "-np");
  EXPECT_EQ(v[2], "3");
  EXPECT_TRUE(contains(v, "--allow-run-as-root"));
  EXPECT_TRUE(contains(v, "--oversubscribe"));
  EXPECT_FALSE(launch_is_single_node());  // TB_MPIRUN set: ranks may be anywhere
}

TEST(MpiLaunch, SrunGetsDashNAndNoOpenMpiFlags) {
  for (const char* srun : {"srun", "/usr/bin/srun"}) {
    ScopedEnv exe("TB_MPIRUN", srun), flags("TB_MPIRUN_FLAGS", nullptr);
    const std::vector<std::string> v = mpirun_prefix(8);
    EXPECT_EQ(v, (std::vector<std::string>{srun, "-n", "8"})) << srun;
  }
}

TEST(MpiLaunch, FlagsFromTheEnvironmentReplaceTheDefaults) {
  ScopedEnv exe("TB_MPIRUN", "srun"), flags("TB_MPIRUN_FLAGS", "--mpi=pmix --gpus-per-task=1");
  EXPECT_EQ(mpirun_prefix(2), (std::vector<std::string>{"srun", "-n", "2", "--mpi=pmix", "--gpus-per-task=1"}));
}

}  // namespace
}  // namespace tb
