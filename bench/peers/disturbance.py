"""Was a run disturbed? The Python twin of harness/disturbance.h, for runs this script
starts as child processes: over one run, the CPU time other processes took on this host
(/proc/stat busy time of all CPUs minus this process's and its waited-for children's
CPU time) plus the time the hypervisor stole (/proc/stat's steal column), as a share of
the host's CPU time (wall × CPUs). On a cloud VM steal is the main source of noise, a
busy neighbour process the second: in the paired rounds of
docs/results/cpu-intel-icelake-2026-11-24/twelfth-session/, every 2-thread small-MLP run
that saw more than 1% steal ran at 111-140k samples/s and every one under 1% at
158-167k. (Some runs under 1% were slow too, in a suite block: a run below the
threshold is not proof of a quiet machine.)"""

import os
import time


def snapshot(stat_path="/proc/stat"):
    """{busy_s, steal_s, own_s, wall_s, cpus}, or None where /proc/stat is unreadable
    (not Linux): busy = user+nice+system+irq+softirq of all CPUs; own = this process's
    and its waited-for children's user + system time."""
    t = os.times()
    own = t.user + t.system + t.children_user + t.children_system
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
