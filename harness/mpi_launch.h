// harness/mpi_launch.h — how a suite starts a multi-process configuration:
// `mpirun -np N <flags> <this executable> <args>`, output appended to the run's log.
// The flags default to what the MPI library built against needs on one machine
// (harness/mpi_library.h: Open MPI's root/oversubscribe/binding/shared-memory flags,
// none for MPICH) and can be replaced with TB_MPIRUN_FLAGS; TB_MPIRUN names another launcher.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace tb {

// The launcher command line (without the program and its arguments): TB_MPIRUN (default
// the mpiexec found at configure time) with -np N and the library's flags for one node
// (mpi_launcher_flags()), or, when TB_MPIRUN names srun, srun -n N --mpi=<the PMI plugin
// the library speaks> --kill-on-bad-exit=1; TB_MPIRUN_FLAGS replaces the flags.
std::vector<std::string> mpirun_prefix(int np);

// Why the launcher cannot start a job, "" when it can: TB_MPIRUN (or the configured
// mpiexec) must be one program (its flags go in TB_MPIRUN_FLAGS) that exists. The
// suite and `launcher N` check it first: a bad launcher is bad input (exit 2).
std::string launcher_problem();

// Runs the prefix + this executable + args, appending stdout and stderr to log_path.
// Returns the exit status (128 + signal when killed), or throws if it cannot start.
// The launcher gets SIGTERM if the calling thread dies first (Linux; a suite SIGKILLed
// leaves no job behind): call it from a thread that outlives the job.
// on_wait, when given, runs about every 100 ms while the job runs (the suite redraws
// the job's progress from it).
int run_under_mpirun(int np, const std::vector<std::string>& args, const std::string& log_path,
                     const std::function<void()>& on_wait = {});

// True when the launch is the default one, every rank on this machine (neither
// TB_MPIRUN nor TB_MPIRUN_FLAGS set: no hostfile or scheduler spreads the ranks).
bool launch_is_single_node();

}  // namespace tb
