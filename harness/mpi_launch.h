// harness/mpi_launch.h — how a suite starts a multi-process configuration:
// `mpirun -np N <flags> <this executable> <args>`, output appended to the run's log.
// The flags default to what Open MPI needs on a single CI machine run as root
// (--allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader) and
// can be replaced with TB_MPIRUN_FLAGS; TB_MPIRUN names another launcher.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace tb {

// The launcher command line (without the program and its arguments): TB_MPIRUN (default
// the mpirun found at configure time) with -np N and Open MPI's flags for one node, or,
// when TB_MPIRUN names srun, srun -n N; TB_MPIRUN_FLAGS replaces the flags.
std::vector<std::string> mpirun_prefix(int np);

// Runs the prefix + this executable + args, appending stdout and stderr to log_path.
// Returns the exit status (128 + signal when killed), or throws if it cannot start.
// on_wait, when given, runs about every 100 ms while the job runs (the suite redraws
// the job's progress from it).
int run_under_mpirun(int np, const std::vector<std::string>& args, const std::string& log_path,
                     const std::function<void()>& on_wait = {});

// True when the launch is the default one, every rank on this machine (neither
// TB_MPIRUN nor TB_MPIRUN_FLAGS set: no hostfile or scheduler spreads the ranks).
bool launch_is_single_node();

}  // namespace tb
