// harness/job.h — "this process is rank r of N", made once in main() and passed down.
// The runner does every job-wide reduction through it (slowest rank's time, phase
// maxima, all-ranks-ok decisions, parameter agreement), and a failure that one rank
// meets alone ends the whole job through its one abort path. A single-process job
// is rank 0 of 1: every reduction is the identity and abort() just exits.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "harness/comm/communicator.h"

namespace tb {

class Job {
 public:
  // Rank 0 of 1.
  Job() = default;
  // Rank r of the communicator's N (MPI world).
  explicit Job(std::shared_ptr<Communicator> world) : world_(std::move(world)) {}

  int rank() const { return world_ ? world_->rank() : 0; }
  int size() const { return world_ ? world_->size() : 1; }
  bool root() const { return rank() == 0; }
  bool multi_rank() const { return size() > 1; }
  // The communicator of a multi-process job (null for a single process).
  const std::shared_ptr<Communicator>& world() const { return world_; }

  // Collectives: every rank calls them in the same order and gets the same answer.
  double max(double v);
  void max(double* v, int n);
  double sum(double v);
  // The sum of v over the ranks whose `group` equals this rank's (e.g. the hostname: the
  // ranks sharing this host); not the same answer on every rank, but every rank calls it.
  double sum_within(double v, const std::string& group);
  bool all_ok(bool ok);
  // Every rank's `mine`, in rank order, on every rank (rank 0's host record and the others').
  std::vector<std::string> gather(const std::string& mine);
  // "" when every rank holds the same parameters (sum and order-independent checksum
  // compared over ranks), else a one-line reason.
  std::string params_disagree(const std::vector<float>& params);

  // Ends the whole job now (exit `code`, by default kExitJobAborted), naming this
  // rank; never returns.
  [[noreturn]] void abort(const std::string& why, int code = 3);

 private:
  std::shared_ptr<Communicator> world_;
};

// Processes the launcher started this one among (OMPI_COMM_WORLD_SIZE, PMI_SIZE,
// SLURM_STEP_NUM_TASKS under srun), read from the environment without starting MPI; 1
// when not launched by mpirun/srun (an sbatch script itself is one process).
int launcher_world_size();

// This process's rank among them, from the same variables (OMPI_COMM_WORLD_RANK,
// PMI_RANK, PMIX_RANK, SLURM_PROCID in an srun step); 0 when not launched.
int launcher_rank();

// The job this process belongs to for a backend: an MPI world for the multi-process
// backends (initialising MPI; watchdog deadline comm_timeout_s), else rank 0 of 1.
Job make_job(bool multi_process, double comm_timeout_s);

// Inside a multi-rank MPI job, ends it now like Job::abort (an error that escaped
// to main() on this rank alone); otherwise returns.
void abort_multi_rank_job(const std::string& why, int code = 3);

// Finalises MPI if it was started (end of main()).
void end_job();

}  // namespace tb
