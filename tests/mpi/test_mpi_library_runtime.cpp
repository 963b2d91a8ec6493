// tests/mpi/test_mpi_library_runtime.cpp — the MPI library named at configure time
// (harness/mpi_library.h, for env.json) is the one this process loads: its
// MPI_Get_library_version (callable before MPI_Init) names the same library and version.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

#include "harness/mpi_library.h"

namespace tb {
namespace {

TEST(MpiLibraryRuntime, LoadedLibraryIsTheConfiguredOne) {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  ASSERT_EQ(MPI_Get_library_version(text, &len), MPI_SUCCESS);
  const std::string loaded(text, static_cast<size_t>(len));
  const std::string name = mpi_library();  // "Open MPI 4.1.4"
  const std::string vendor = name.substr(0, name.find_last_of(' '));
  const std::string version = name.substr(name.find_last_of(' ') + 1);
  if (mpi_flavour() == "openmpi") {
    EXPECT_NE(loaded.find("Open MPI v" + version), std::string::npos) << loaded;
  }
  if (vendor == "MPICH") {
    EXPECT_NE(loaded.find("MPICH Version:"), std::string::npos) << loaded;
  }
  EXPECT_NE(loaded.find(version), std::string::npos) << name << " vs " << loaded;
}

}  // namespace
}  // namespace tb
