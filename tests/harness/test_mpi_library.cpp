// tests/harness/test_mpi_library.cpp — the MPI library named for env.json
// (harness/mpi_library.h) agrees with its flavour and with the launcher this build
// uses (`mpiexec --version` names the same version).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "harness/mpi_launch.h"
#include "harness/mpi_library.h"
#include "tests/shell.h"

namespace tb {
namespace {

TEST(MpiLibrary, NameMatchesFlavour) {
  const std::string name = mpi_library(), flavour = mpi_flavour();
  if (flavour == "none") {
    EXPECT_EQ(name, "none (built without MPI)");
    return;
  }
  ASSERT_FALSE(name.empty());
  if (flavour == "openmpi") {
    EXPECT_EQ(name.rfind("Open MPI ", 0), 0u) << name;
  } else if (flavour == "mpich") {
    EXPECT_TRUE(name.rfind("MPICH ", 0) == 0 || name.rfind("Intel MPI ", 0) == 0 || name.rfind("MVAPICH ", 0) == 0)
        << name;
  }
}

TEST(MpiLibrary, LauncherReportsTheSameVersion) {
  if (mpi_flavour() != "openmpi" && mpi_flavour() != "mpich") GTEST_SKIP() << "MPI: " << mpi_library();
  if (const char* e = std::getenv("TB_MPIRUN"); e && *e) GTEST_SKIP() << "TB_MPIRUN names another launcher";
  const std::string name = mpi_library();
  const std::string version = name.substr(name.find_last_of(' ') + 1);  // "4.1.4"
  const test::ShellResult r = test::shell(mpirun_prefix(1)[0] + " --version");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(version), std::string::npos) << name << " vs:\n" << r.out;
}

}  // namespace
}  // namespace tb
