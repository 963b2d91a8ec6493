// harness/mpi_library.h — the MPI library this build links, as cmake/TbMpi.cmake found it
// at configure time: its name and version (for env.json), its flavour, and what its
// launcher needs on one machine (the suite's default launcher line, harness/mpi_launch.cpp).
#pragma once

#include <string>

namespace tb {

// "Open MPI 4.1.4", "MPICH 4.0.2", ...; "none (built without MPI)".
std::string mpi_library();

// "openmpi", "mpich" (the MPICH family: MPICH, Intel MPI, MVAPICH), "other" or "none".
std::string mpi_flavour();

// The flags mpirun/mpiexec gets on one machine, space-separated: Open MPI's for root,
// oversubscription, no binding and shared memory; "" for MPICH's hydra, which needs none.
std::string mpi_launcher_flags();

// The srun --mpi plugin this library and Debian's Slurm share: "pmix" (Open MPI),
// "pmi2" (MPICH); "" where unknown (srun then uses the cluster's MpiDefault).
std::string srun_mpi_plugin();

}  // namespace tb
