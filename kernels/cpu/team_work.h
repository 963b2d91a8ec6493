// kernels/cpu/team_work.h — a loop's iterations shared by an OpenMP team so that a
// thread that finishes its own share takes the runs another thread has not started.
// Used where the kernels split work whose result does not depend on which thread does
// it (a GEMM's row panels, the blocked linear step's row groups and tiles): a static
// split waits at the next barrier for the slowest thread, and on a shared machine a
// core slowed by a neighbour is the slowest every time (docs/performance.md, eleventh
// session: 13-17% of each thread's time at 2 threads went to waiting in libgomp).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tb::cpu {

// One per thread of a team, a cache line each: the next of that thread's runs to hand
// out. Its owner sets it to 0 (reset_own) at a point no thread reads it: after one
// barrier and before the next, with the share_runs that uses it after that one.
struct alignas(64) WorkCounter {
  std::atomic<int64_t> next{0};
};

// The calling thread's `count` counters (grow-only, thread_local); the team of the
// parallel region it opens next uses them through the returned pointer. A later call on
// the same thread with a larger count frees the array an earlier call returned (the
// GEMM and the blocked linear step share it; neither calls the other inside its region).
inline WorkCounter* work_counters(int count) {
  thread_local std::unique_ptr<WorkCounter[]> counters;
  thread_local int capacity = 0;
  if (capacity < count) {
    counters.reset(new WorkCounter[static_cast<std::size_t>(count)]);
    capacity = count;
  }
  return counters.get();
}

inline void reset_own(WorkCounter* counters, int tid) { counters[tid].next.store(0, std::memory_order_relaxed); }

// Thread tid's static share of [0, count) in runs of `run` (>= 1) items, as share_runs
// splits it: items [*lo, *hi).
inline void own_share(int tid, int n, int64_t count, int64_t run, int64_t* lo, int64_t* hi) {
  const int64_t runs = (count + run - 1) / run;
  *lo = std::min(count, runs * tid / n * run);
  *hi = std::min(count, runs * (tid + 1) / n * run);
}

// Thread tid of a team of n calls f(i0, i1) for runs [i0, i1) of at most `run` (>= 1) items
// covering [0, count). Thread u's share is runs [R u / n, R (u + 1) / n) of the R runs
// (the static split), handed out one run at a time by counters[u]: each thread drains
// its own share first, then the others'. Every run is done exactly once, by whichever
// thread takes it, provided every counter was 0 when the team started on this loop. One
// thread (n == 1) gets [0, count) as one call.
template <class F>
void share_runs(int tid, int n, int64_t count, int64_t run, WorkCounter* counters, const F& f) {
  if (n == 1) {
    if (count > 0) f(int64_t{0}, count);
    return;
  }
  const int64_t runs = (count + run - 1) / run;
  for (int v = 0; v < n; ++v) {
    const int u = (tid + v) % n;
    const int64_t lo = runs * u / n, hi = runs * (u + 1) / n;
    for (int64_t q; (q = lo + counters[u].next.fetch_add(1, std::memory_order_relaxed)) < hi;) {
      f(q * run, std::min(count, (q + 1) * run));
    }
  }
}

}  // namespace tb::cpu
