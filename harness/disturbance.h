// harness/disturbance.h — was this measurement disturbed? Over one repetition, the
// CPU time other processes took on this host (/proc/stat busy time of all CPUs minus
// this job's own CPU time) and the time the hypervisor stole (/proc/stat's steal
// column), each as a share of the host's CPU time (wall x CPUs). On cloud VMs steal is
// the main source of noise; a busy neighbour process the second.
#pragma once

#include <cstdint>
#include <string>

namespace tb {

// /proc/stat and this process's CPU time at one instant (zeros where unreadable).
struct CpuSnapshot {
  double busy_s = 0;   // all CPUs: user+nice+system+irq+softirq (steal and idle excluded)
  double steal_s = 0;  // all CPUs: steal
  double own_s = 0;    // this process: user + system (all its threads)
  double wall_s = 0;   // steady clock
  int cpus = 0;        // online CPUs
  bool ok = false;     // /proc/stat was readable
};

CpuSnapshot cpu_snapshot();

// This process's CPU time so far, user + system of all its threads (getrusage), seconds.
double own_cpu_seconds();

// Which /proc/stat this process reads: the running kernel's boot_id (containers on one node
// share it, whatever their hostnames), else the hostname. Ranks with equal keys are one host.
std::string kernel_key();

struct Disturbance {
  double others_share = -1;  // other processes' share of the host's CPU time, [0, 1]; < 0: unknown
  double steal_share = -1;   // stolen share of the host's CPU time, [0, 1]; < 0: unknown
};

// Between two snapshots. own_s_job: the CPU time of this job's processes on this host
// over the interval (this process's own for one process; the sum over ranks sharing the
// host for an MPI job), subtracted from the busy time.
Disturbance disturbance_between(const CpuSnapshot& a, const CpuSnapshot& b, double own_s_job);

// Intervals shorter than this are too coarse to judge alone (10 ms ticks per CPU).
inline constexpr double kMinJudgedS = 0.5;

// Which window a timed repetition is judged over, from the seconds it lasted (rep_s) and
// the seconds since the first timed repetition began (all_s, which includes it): its own;
// all timed repetitions so far when its own is shorter than kMinJudgedS; none when even
// that is shorter (the shares stay unknown: one 10 ms tick is 1% of a 0.5 s window on
// 2 CPUs, and a whole quick-suite repetition of a few ms reads 0% or 100%).
enum class JudgedWindow { kOwn, kSinceFirst, kNone };
JudgedWindow judged_window(double rep_s, double all_s);

// A row is marked disturbed above this share (others or steal): 5% of the host's CPU time.
inline constexpr double kDisturbedShare = 0.05;

}  // namespace tb
