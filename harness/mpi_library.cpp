// harness/mpi_library.cpp — see mpi_library.h. The strings are compile definitions set
// by harness/CMakeLists.txt from cmake/TbMpi.cmake; without MPI they are absent.
#include "harness/mpi_library.h"

namespace tb {

std::string mpi_library() {
#if defined(TB_MPI_LIBRARY)
  return TB_MPI_LIBRARY;
#else
  return "none (built without MPI)";
#endif
}

std::string mpi_flavour() {
#if defined(TB_MPI_FLAVOUR)
  return TB_MPI_FLAVOUR;
#else
  return "none";
#endif
}

std::string mpi_launcher_flags() {
#if defined(TB_MPIRUN_DEFAULT_FLAGS)
  return TB_MPIRUN_DEFAULT_FLAGS;
#else
  return "";
#endif
}

std::string srun_mpi_plugin() {
#if defined(TB_SRUN_MPI_PLUGIN)
  return TB_SRUN_MPI_PLUGIN;
#else
  return "";
#endif
}

}  // namespace tb
