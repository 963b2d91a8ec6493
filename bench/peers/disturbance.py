"""Was a run disturbed? The Python twin of harness/disturbance.h, for runs this script
starts as child processes: over one run, the CPU time other processes took on this host
(/proc/stat busy time of all CPUs minus this process's and its waited-for children's
CPU time) plus the time the hypervisor stole (/proc/stat's steal column), as a share of
the host's CPU time (wall × CPUs). On a cloud VM steal is the main source of noise, a
busy neighbour process the second: of the 40 two-thread small-MLP cpu-omp runs in the
paired rounds under docs/results/cpu-intel-icelake-2026-11-24/ (twelfth and thirteenth
sessions), the 5 with under 0.9% steal ran at 156-167k samples/s, the 35 with 0.99% or
more at 95-151k. (Some suite runs at 0-0.7% steal were slow too: a run below the line is
not proof of a quiet machine.)"""

import os
import resource
import time


def own_cpu_s():
    """This process's and its waited-for children's user + system seconds (getrusage:
    microseconds, as harness/disturbance.cpp; os.times() counts 10 ms ticks)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        total += ru.ru_utime + ru.ru_stime
    return total


def snapshot(stat_path="/proc/stat"):
    """{busy_s, steal_s, own_s, wall_s, cpus}, or None where /proc/stat is unreadable
    (not Linux): busy = user+nice+system+irq+softirq of all CPUs; own = own_cpu_s()."""
    own = own_cpu_s()
    wall = time.monotonic()
    try:
        with open(stat_path, encoding="ascii") as f:
            line = f.readline()
        hz = os.sysconf("SC_CLK_TCK")
        cpus = os.sysconf("SC_NPROCESSORS_ONLN")
    except (OSError, ValueError):
        return None
    if not line.startswith("cpu ") or hz <= 0:
        return None
    try:  # cpu user nice system idle iowait irq softirq steal guest guest_nice (USER_HZ ticks)
        v = [float(x) for x in line.split()[1:9]]
    except ValueError:
        return None
    if len(v) < 8:
        return None
    return {"busy_s": (v[0] + v[1] + v[2] + v[5] + v[6]) / hz, "steal_s": v[7] / hz, "own_s": own,
            "wall_s": wall, "cpus": max(1, cpus)}


# A row is marked disturbed above this share (others or steal), as harness/disturbance.h's
# kDisturbedShare.
DISTURBED_SHARE = 0.05

# Windows shorter than this are too coarse to judge alone (10 ms ticks per CPU), as
# harness/disturbance.h's kMinJudgedS.
MIN_JUDGED_S = 0.5


def judged_from(first, before, after):
    """The snapshot a timed repetition from `before` to `after` is judged from (as
    harness/disturbance.h's judged_window): `before` when it lasted MIN_JUDGED_S or more;
    `first`, the first timed repetition's start, when that window is long enough; None
    (unknown) when even that is shorter: a few 10 ms ticks can't tell a neighbour from
    rounding, and a repetition of a few ms reads 0% or 100%."""
    if before is None or after is None:
        return None
    if after["wall_s"] - before["wall_s"] >= MIN_JUDGED_S:
        return before
    if first is not None and after["wall_s"] - first["wall_s"] >= MIN_JUDGED_S:
        return first
    return None


def shares_between(a, b):
    """(other processes' share, stolen share) of the host's CPU time between snapshots
    a and b, each in [0, 1]; None when either is None or no time passed. (Tick
    granularity, 10 ms per CPU, can make the others' part slightly negative: clamped.)"""
    if a is None or b is None:
        return None
    host_s = (b["wall_s"] - a["wall_s"]) * b["cpus"]
    if host_s <= 0:
        return None
    others = b["busy_s"] - a["busy_s"] - (b["own_s"] - a["own_s"])
    steal = b["steal_s"] - a["steal_s"]
    return min(1.0, max(0.0, others / host_s)), min(1.0, max(0.0, steal / host_s))


def share_between(a, b):
    """Other processes' plus stolen share of the host's CPU time between snapshots a
    and b, in [0, 1]; None when either is None or no time passed."""
    shares = shares_between(a, b)
    return None if shares is None else min(1.0, sum(shares))


def row_cells(a, b):
    """A result row's others_cpu_share, steal_share and disturbed cells for the window
    from snapshot a to b (empty where unknown), as the harness writes them."""
    shares = shares_between(a, b)
    if shares is None:
        return {"others_cpu_share": "", "steal_share": "", "disturbed": ""}
    others, steal = shares
    return {"others_cpu_share": f"{others:.9g}", "steal_share": f"{steal:.9g}",
            "disturbed": "true" if max(others, steal) > DISTURBED_SHARE else "false"}
