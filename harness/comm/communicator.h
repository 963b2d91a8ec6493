// harness/comm/communicator.h — the host collectives of a multi-process job (MPI:
// comm/mpi_communicator.cpp): the Job's reductions (harness/job.h), cpu-ddp's
// gradient buckets, and the few scalars cuda-ddp exchanges (its device gradients go
// through NCCL, harness/backends/). All calls are collective: every rank calls them
// in the same order.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tb {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Node-local rank (ranks sharing this host), for picking a GPU.
  virtual int local_rank() const = 0;
  virtual std::string name() const = 0;  // "mpi", "nccl"

  // In-place sum over ranks of data[0, n), blocking.
  virtual void allreduce_sum(float* data, int64_t n) = 0;
  virtual void allreduce_sum(double* data, int64_t n) = 0;
  virtual void allreduce_max(double* data, int64_t n) = 0;

  // Non-blocking in-place sum; returns a handle for wait(). Buffers must stay
  // untouched until wait() returns. Handles complete in any order.
  virtual int iallreduce_sum(float* data, int64_t n) = 0;
  virtual void wait(int handle) = 0;
  // Gives the library a chance to progress outstanding requests (MPI needs calls
  // to make progress; a no-op where progress is asynchronous).
  virtual void poke() = 0;

  // recv[r * n .. (r + 1) * n) = rank r's send[0, n), on every rank.
  virtual void allgather(const float* send, int64_t n, float* recv) = 0;
  virtual void allgather(const double* send, int64_t n, double* recv) = 0;

  virtual void broadcast(float* data, int64_t n, int root) = 0;
  virtual void broadcast(char* data, int64_t n, int root) = 0;
  virtual void barrier() = 0;
  // Ends every rank of the job now, with this exit code. Never returns.
  [[noreturn]] virtual void abort(int code, const std::string& why) = 0;
};

// True when `ok` holds on every rank (a collective: every rank calls it and all get
// the same answer, so they take the same branch).
inline bool all_ranks_ok(Communicator& world, bool ok) {
  double bad = ok ? 0 : 1;
  world.allreduce_max(&bad, 1);
  return bad == 0;
}

// Data-parallel ranks must end with identical parameters: compares this rank's
// parameter sum with every other's (max of x and of -x) and throws if they differ.
inline void check_ranks_agree(Communicator& world, const std::vector<float>& params) {
  double sum = 0;
  for (float v : params) sum += v;
  double minmax[2] = {sum, -sum};
  world.allreduce_max(minmax, 2);
  if (minmax[0] != -minmax[1]) {
    throw std::runtime_error("ranks ended with different parameters (checksums " + std::to_string(-minmax[1]) +
                             " .. " + std::to_string(minmax[0]) + ")");
  }
}

}  // namespace tb
