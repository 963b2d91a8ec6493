// harness/job.cpp — see job.h.
#include "harness/job.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "harness/exit_codes.h"
#include "harness/fault_plan.h"

static_assert(tb::kExitJobAborted == 3, "job.h's default abort code");
#if defined(TB_HAVE_MPI)
#include "harness/comm/mpi_session.h"
#endif

namespace tb {

double Job::max(double v) {
  if (world_) world_->allreduce_max(&v, 1);
  return v;
}

void Job::max(double* v, int n) {
  if (world_) world_->allreduce_max(v, n);
}

double Job::sum(double v) {
  if (world_) world_->allreduce_sum(&v, 1);
  return v;
}

double Job::sum_within(double v, const std::string& group) {
  if (!world_) return v;
  // The group as a 64-bit hash in two exact 32-bit halves, beside v: one allgather.
  const uint64_t key = std::hash<std::string>{}(group);
  const double mine[3] = {static_cast<double>(key >> 32), static_cast<double>(key & 0xffffffffu), v};
  std::vector<double> all(static_cast<size_t>(3 * world_->size()));
  world_->allgather(mine, 3, all.data());
  double s = 0;
  for (size_t r = 0; r < all.size(); r += 3) {
    if (all[r] == mine[0] && all[r + 1] == mine[1]) s += all[r + 2];
  }
  return s;
}

std::vector<std::string> Job::gather(const std::string& mine) {
  if (!world_) return {mine};
  std::vector<std::string> all;
  for (int r = 0; r < world_->size(); ++r) {  // one broadcast of length and bytes per rank: small
    std::string s = r == world_->rank() ? mine : std::string();
    int64_t len = static_cast<int64_t>(s.size());
    world_->broadcast(reinterpret_cast<char*>(&len), sizeof len, r);
    s.resize(static_cast<size_t>(len));
    if (!s.empty()) world_->broadcast(s.data(), static_cast<int64_t>(s.size()), r);
    all.push_back(s);
  }
  return all;
}

bool Job::all_ok(bool ok) { return world_ ? all_ranks_ok(*world_, ok) : ok; }

std::string Job::params_disagree(const std::vector<float>& params) {
  if (!world_) return "";
  try {
    check_ranks_agree(*world_, params);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

void Job::abort(const std::string& why, int code) {
  if (world_ && world_->size() > 1) world_->abort(code, why);
  std::fprintf(stderr, "trainbench: %s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(code);
}

int launcher_world_size() {
  const char* vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"};
  for (const char* v : vars) {
    if (const char* s = std::getenv(v)) return std::max(1, std::atoi(s));
  }
  // srun's tasks: SLURM_STEP_NUM_TASKS, set for a step only. Not SLURM_NTASKS: an sbatch
  // script (the batch step, one process) carries the allocation's SLURM_NTASKS and
  // SLURM_PROCID=0 too, and is not a rank of anything.
  if (const char* s = std::getenv("SLURM_STEP_NUM_TASKS"); s && std::getenv("SLURM_PROCID")) {
    return std::max(1, std::atoi(s));
  }
  return 1;
}

int launcher_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (const char* s = std::getenv(v)) return std::max(0, std::atoi(s));
  }
  if (std::getenv("SLURM_STEP_NUM_TASKS")) {
    if (const char* s = std::getenv("SLURM_PROCID")) return std::max(0, std::atoi(s));
  }
  return 0;
}

Job make_job(bool multi_process, double comm_timeout_s) {
#if defined(TB_HAVE_MPI)
  if (multi_process) {
    fault_from_env().before_join(launcher_rank());  // TB_FAULT step 0 (tests)
    return Job(mpi_world(comm_timeout_s));
  }
#else
  (void)multi_process;
  (void)comm_timeout_s;
#endif
  return Job();
}

void abort_multi_rank_job(const std::string& why, int code) {
#if defined(TB_HAVE_MPI)
  if (!mpi_active()) return;
  Job job(mpi_world(0));
  if (job.multi_rank()) job.abort(why, code);
#else
  (void)why;
#endif
}

void end_job() {
#if defined(TB_HAVE_MPI)
  mpi_finalize_if_initialised();
#endif
}

}  // namespace tb
