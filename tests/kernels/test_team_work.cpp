// tests/kernels/test_team_work.cpp — share_runs (kernels/cpu/team_work.h): every run of
// a loop done exactly once by an OpenMP team, whatever the team size, and a thread that
// comes late finds its share taken by the others.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/team_work.h"

namespace tb::cpu {
namespace {

// Runs share_runs over [0, count) on a team of n threads; returns how many times each
// index was visited and (in *by_thread) how many indices each thread did. `late` >= 0:
// that thread starts only after every other thread has returned from share_runs.
std::vector<int> visits(int n, int64_t count, int64_t run, int late, std::vector<int64_t>* by_thread) {
  std::vector<std::atomic<int>> seen(static_cast<size_t>(count));
  by_thread->assign(static_cast<size_t>(n), 0);
  WorkCounter* counters = work_counters(n);
  std::atomic<int> done{0};
  int team = 0;
#pragma omp parallel num_threads(n)
  {
    const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
#pragma omp single
    team = nt;
    reset_own(counters, tid);
#pragma omp barrier
    if (tid == late) {
      while (done.load() < nt - 1) std::this_thread::yield();
    }
    int64_t mine = 0;
    share_runs(tid, nt, count, run, counters, [&](int64_t i0, int64_t i1) {
      EXPECT_LT(i0, i1);
      EXPECT_LE(i1 - i0, nt == 1 ? count : run);
      for (int64_t i = i0; i < i1; ++i) seen[static_cast<size_t>(i)].fetch_add(1);
      mine += i1 - i0;
    });
    (*by_thread)[static_cast<size_t>(tid)] = mine;
    done.fetch_add(1);
  }
  EXPECT_EQ(team, n) << "the test needs a team of the size it asked for";
  std::vector<int> out;
  for (const auto& s : seen) out.push_back(s.load());
  return out;
}

TEST(ShareRuns, EveryIndexExactlyOnceForAnyTeamCountAndRun) {
  std::vector<int64_t> by_thread;
  for (int n : {1, 2, 3, 8}) {
    for (int64_t count : {0, 1, 5, 12, 37}) {
      for (int64_t run : {1, 3, 7}) {
        SCOPED_TRACE(std::to_string(n) + " threads, count " + std::to_string(count) + ", run " + std::to_string(run));
        const std::vector<int> seen = visits(n, count, run, -1, &by_thread);
        EXPECT_EQ(seen, std::vector<int>(static_cast<size_t>(count), 1));
      }
    }
  }
}

// A thread arrives after the others have finished: they must have done its share too
// (without the taking, it would do its 1/n of the runs alone while the rest wait). The
// last thread's share ends in a short run (41 items in runs of 2).
TEST(ShareRuns, ALateThreadFindsItsShareTaken) {
  std::vector<int64_t> by_thread;
  for (int n : {2, 3}) {
    for (int late : {0, n - 1}) {
      SCOPED_TRACE(std::to_string(n) + " threads, thread " + std::to_string(late) + " late");
      const std::vector<int> seen = visits(n, 41, 2, late, &by_thread);
      EXPECT_EQ(seen, std::vector<int>(41, 1));
      EXPECT_EQ(by_thread[static_cast<size_t>(late)], 0);
      int64_t total = 0;
      for (int64_t b : by_thread) total += b;
      EXPECT_EQ(total, 41);
    }
  }
}

// own_share is the static split share_runs starts from: in thread order, the shares
// cover [0, count) without gaps or overlaps, and each starts on a run boundary.
TEST(ShareRuns, OwnSharesPartitionTheLoop) {
  for (int n : {1, 2, 3, 8}) {
    for (int64_t count : {1, 5, 12, 37}) {
      for (int64_t run : {1, 3, 7}) {
        SCOPED_TRACE(std::to_string(n) + " threads, count " + std::to_string(count) + ", run " + std::to_string(run));
        int64_t end = 0;
        for (int t = 0; t < n; ++t) {
          int64_t lo, hi;
          own_share(t, n, count, run, &lo, &hi);
          EXPECT_EQ(lo, end);
          EXPECT_LE(lo, hi);
          EXPECT_TRUE(lo == hi || lo % run == 0);
          end = hi;
        }
        EXPECT_EQ(end, count);
      }
    }
  }
}

// Counters reset by their owners between two loops: the second loop runs whole again.
TEST(ShareRuns, CountersResetBetweenLoops) {
  std::vector<int64_t> by_thread;
  for (int round = 0; round < 3; ++round) {
    const std::vector<int> seen = visits(3, 20, 3, -1, &by_thread);
    EXPECT_EQ(seen, std::vector<int>(20, 1)) << "round " << round;
  }
}

}  // namespace
}  // namespace tb::cpu
