// tests/mpi/mpi_job_sum_check.cpp — run under mpirun by ctest (1, 2 and 3 ranks):
// Job::sum_within sums over the ranks of one group only (the runner's groups are hosts:
// a rank's CPU time is subtracted from its own host's busy time, not another's). Ranks
// are grouped by parity here, as two hosts would be; the values are small integers, so
// every sum is exact. Exit 0 only if every rank got its group's sum.
#include <cstdio>
#include <memory>
#include <string>

#include "harness/comm/mpi_session.h"
#include "harness/job.h"

int main() {
  std::shared_ptr<tb::Communicator> world = tb::mpi_world(30);
  const int R = world->size(), me = world->rank();
  tb::Job job(world);
  int failures = 0;
  const double mine = 10.0 + me;  // rank r holds 10 + r
  // Parity groups: the sum over the ranks of my parity.
  double want = 0;
  for (int q = me % 2; q < R; q += 2) want += 10.0 + q;
  const double got = job.sum_within(mine, me % 2 == 0 ? "host-even" : "host-odd");
  if (got != want) {
    std::fprintf(stderr, "rank %d: sum_within by parity %g, want %g\n", me, got, want);
    ++failures;
  }
  // One group: the plain sum (every rank calls each collective, failing or not).
  const double all = job.sum_within(mine, "one-host");
  const double total = job.sum(mine);
  if (all != total) {
    std::fprintf(stderr, "rank %d: sum_within over one group %g, sum %g\n", me, all, total);
    ++failures;
  }
  double f = failures;
  world->allreduce_sum(&f, 1);
  if (me == 0) std::printf("job sum_within over %d ranks: %s\n", R, f == 0 ? "ok" : "FAILED");
  tb::mpi_finalize_if_initialised();
  return f == 0 ? 0 : 1;
}
