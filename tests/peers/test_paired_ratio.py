"""bench/peers/paired_ratio.py (`make perf`'s paired rounds): cpu-omp and torch-cpu
repetitions alternate, the order flipping every round, and paired.json's ratios are
the rows' own samples/s divided round by round; an entry's thread counts take turns
within each round, and paired.json's scaling divides its cpu-omp rows round by round. By default the MLP entries are
paired, and the other entries' thread values whose ratio in results.csv is within 15%
of their target. Without torch it says `skipped:` and writes nothing; bad input exits 2."""

import json
import os
import statistics
import subprocess
import sys

import pytest

from peer_helpers import PEERS, rows, torch, trainbench  # noqa: F401, F811 (fixtures used by name)

SCRIPT = os.path.join(PEERS, "paired_ratio.py")
SUITE = """\
defaults: --epochs 1 --warmup 1 --reps 2 --seed 1
lin: --model linear --layers 16,1 --samples 1000 --batch 100 --lr 0.05 --backends reference,cpu-omp --threads 1
mlp: --model=mlp --layers 24,32,3 --samples 1000 --batch 100 --lr 0.2 --shuffle --backends cpu-omp --threads 1,all
ref: --model mlp --layers 8,4,2 --samples 200 --batch 50 --backends reference
"""


def paired(tmp_path, trainbench, *extra, python=sys.executable):
    (tmp_path / "t.suite").write_text(SUITE)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    r = subprocess.run([sys.executable, SCRIPT, "--suite", tmp_path / "t.suite", "--results", out,
                        "--trainbench", trainbench, "--python", python, *map(str, extra)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r, out


def test_rounds_alternate_and_ratios_come_from_the_rows(tmp_path, trainbench, torch):
    # --max-disturbance 1 judges no round disturbed: exactly 3 rounds (the repeats are
    # tested below, with made-up disturbance).
    r, out = paired(tmp_path, trainbench, "--rounds", 3, "--max-disturbance", 1)
    assert r.returncode == 0, r.stdout
    got = rows(out / "paired.csv")
    assert {x["workload"] for x in got} == {"mlp"}  # the MLP entry only, by default
    assert all(x["status"] == "ok" for x in got)
    doc = json.loads((out / "paired.json").read_text())
    assert doc["rounds"] == 3
    nproc = len(os.sched_getaffinity(0))
    assert [(p["workload"], p["threads"]) for p in doc["pairs"]] == [("mlp", 1), ("mlp", nproc)]
    # Round r runs the thread values in order (r even) or reversed (r odd), each as cpu-omp
    # and torch-cpu in the order the round's parity says: 1 then all, all then 1, 1 then all.
    t1, tn = 1, nproc
    ran = [(x["backend"], int(x["threads"])) for x in got]
    assert ran == [("cpu-omp", t1), ("torch-cpu", t1), ("cpu-omp", tn), ("torch-cpu", tn),
                   ("torch-cpu", tn), ("cpu-omp", tn), ("torch-cpu", t1), ("cpu-omp", t1),
                   ("cpu-omp", t1), ("torch-cpu", t1), ("cpu-omp", tn), ("torch-cpu", tn)]
    # Each row's thread value by its place in that order (not by its threads cell, which
    # is the same for both values on a 1-CPU machine): value 0 is "1", value 1 is "all".
    value = [i for r in range(3) for i in ([0, 1] if r % 2 == 0 else [1, 0]) for _ in range(2)]
    for i, p in enumerate(doc["pairs"]):
        mine = [x for x, v in zip(got, value) if v == i]
        assert all(x["threads"] == str(p["threads"]) for x in mine)
        ours = [float(x["samples_per_s"]) for x in mine if x["backend"] == "cpu-omp"]
        theirs = [float(x["samples_per_s"]) for x in mine if x["backend"] == "torch-cpu"]
        assert p["cpu_omp_samples_per_s"] == ours and p["torch_cpu_samples_per_s"] == theirs
        assert p["ratios"] == [o / t for o, t in zip(ours, theirs)]
        assert p["median_ratio"] == statistics.median(p["ratios"])
        assert p["failures"] == []
        assert (p["rounds_run"], p["rounds_used"], p["disturbed"]) == (3, 3, False)
        # Each round's disturbance is measured (--max-disturbance 1 leaves none out here). These
        # rows time well under 0.5 s, so it comes from around each process; the rows' own
        # figure is test_a_runs_share_is_its_rows_unless_the_row_timed_too_little's.
        assert len(p["disturbance"]) == 3 and all(d is None or 0 <= d <= 1 for d in p["disturbance"])
        assert p["counted"] == [0, 1, 2]
    # The scaling, round by round: cpu-omp at all threads ÷ at 1 thread of the same round.
    if nproc > 1:
        one, most = doc["pairs"][0]["cpu_omp_samples_per_s"], doc["pairs"][1]["cpu_omp_samples_per_s"]
        [sc] = doc["scaling"]
        assert sc["workload"] == "mlp" and sc["threads"] == [1, nproc]
        assert sc["ratios"] == [m / o for m, o in zip(most, one)]
        assert sc["median_ratio"] == statistics.median(sc["ratios"])
    else:
        assert doc["scaling"] == []
    assert not [n for n in os.listdir(out) if n.startswith(".paired-export")]  # exports removed
    r, out = paired(tmp_path, trainbench, "--rounds", 1, "--only", "lin", "--max-disturbance", 1)
    assert r.returncode == 0, r.stdout
    assert [(p["workload"], len(p["ratios"])) for p in json.loads((out / "paired.json").read_text())["pairs"]] \
        == [("lin", 1)]


def test_without_torch_it_skips_and_writes_nothing(tmp_path, trainbench):
    python = tmp_path / "python-no-torch"
    python.write_text(f"#!{sys.executable}\nimport runpy, sys\nsys.modules['torch'] = None\n"
                      "a = sys.argv[1:]\n"
                      "if a[0] == '-c':\n    sys.argv = ['-c', *a[2:]]\n    exec(a[1])\n"
                      "else:\n    sys.argv = a\n    runpy.run_path(a[0], run_name='__main__')\n")
    python.chmod(0o755)
    r, out = paired(tmp_path, trainbench, python=python)
    assert r.returncode == 0, r.stdout
    assert "paired_ratio.py: skipped: python3-torch not importable" in r.stdout
    assert os.listdir(out) == []


def test_bad_input_exits_2_and_writes_nothing(tmp_path, trainbench):
    for extra in (["--rounds", 0], ["--only", "nope"], ["--only", "ref"], ["--max-disturbance", -0.1],
                  ["--max-disturbance", 1.5], ["--max-disturbance", "nan"]):
        r, out = paired(tmp_path, trainbench, *extra)
        assert r.returncode == 2, (extra, r.stdout)
        assert os.listdir(out) == [], extra
    r = subprocess.run([sys.executable, SCRIPT, "--suite", tmp_path / "t.suite", "--results", tmp_path / "none",
                        "--trainbench", trainbench], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 2 and "no such folder" in r.stdout, r.stdout


def test_a_second_run_into_the_same_folder_is_refused(tmp_path, trainbench, torch):
    import fcntl  # noqa: PLC0415
    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".paired.lock", "w") as held:  # as a first run holds it
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r, _ = paired(tmp_path, trainbench, "--rounds", 1)
    assert r.returncode == 2, r.stdout
    assert "another paired_ratio.py is writing into" in r.stdout
    assert sorted(os.listdir(out)) == [".paired.lock"]


def test_sigint_mid_run_keeps_whole_rows_and_writes_no_json(tmp_path, trainbench, torch):
    import signal  # noqa: PLC0415
    import time  # noqa: PLC0415
    (tmp_path / "t.suite").write_text(SUITE)
    out = tmp_path / "out"
    out.mkdir()
    p = subprocess.Popen([sys.executable, SCRIPT, "--suite", tmp_path / "t.suite", "--results", out,
                          "--trainbench", trainbench, "--rounds", "50"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (out / "paired.csv").exists():
        time.sleep(0.2)
    time.sleep(1.0)
    os.killpg(p.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole group
    text, _ = p.communicate(timeout=60)
    assert p.returncode == 130, text
    assert "interrupted" in text
    assert not (out / "paired.json").exists()
    # Whole rows only: each ok, or failed with its reason (the run the signal caught).
    got = rows(out / "paired.csv")
    statuses = [(x["backend"], x["status"]) for x in got]
    assert got and all(x["backend"] in ("cpu-omp", "torch-cpu") for x in got), statuses
    assert all(s == "ok" or s.startswith("failed: ") for _, s in statuses), statuses
    assert sum(s != "ok" for _, s in statuses) <= 1, statuses
    assert not [n for n in os.listdir(out) if n.startswith(".paired-export")]


def test_non_mlp_thread_values_near_their_target_are_paired(tmp_path, trainbench, torch):
    """With results.csv beside it (the suite and run_peers.py have run), a linear entry's
    thread value is paired when its ratio of medians is within 15% of its target."""
    import csv  # noqa: PLC0415
    nproc = len(os.sched_getaffinity(0))
    if nproc < 2:
        pytest.skip("needs 2 CPUs: the suite's 1 and all must be two thread counts")
    (tmp_path / "t.suite").write_text(
        "defaults: --epochs 1 --warmup 1 --reps 2 --seed 1\n"
        "linear-1024x3-t: --model linear --layers 16,3 --samples 1000 --batch 100 --lr 0.05 --backends cpu-omp "
        "--threads 1,all\n"
        "linear-64x1-t: --model linear --layers 16,1 --samples 1000 --batch 100 --lr 0.05 --backends cpu-omp "
        "--threads 1\n")
    out = tmp_path / "out"
    out.mkdir()
    with open(out / "results.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["workload", "backend", "threads", "samples_per_s", "status"])
        w.writeheader()
        for workload, backend, threads, sps in [
                ("linear-1024x3-t", "cpu-omp", 1, 300), ("linear-1024x3-t", "torch-cpu", 1, 100),  # 3x: far
                ("linear-1024x3-t", "cpu-omp", nproc, 190), ("linear-1024x3-t", "torch-cpu", nproc, 100),  # 1.9x
                ("linear-64x1-t", "cpu-omp", 1, 350), ("linear-64x1-t", "torch-cpu", 1, 100)]:  # 3.5x of 4: 12.5%
            w.writerow({"workload": workload, "backend": backend, "threads": threads, "samples_per_s": sps,
                        "status": "ok"})
    r = subprocess.run([sys.executable, SCRIPT, "--suite", tmp_path / "t.suite", "--results", out,
                        "--trainbench", trainbench, "--rounds", "1", "--max-disturbance", "1"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    assert "pairing linear-1024x3-t threads all: suite ratio 1.90x, target 2x (within 15%)" in r.stdout
    assert "pairing linear-64x1-t threads 1: suite ratio 3.50x, target 4x (within 15%)" in r.stdout
    pairs = json.loads((out / "paired.json").read_text())["pairs"]
    assert [(p["workload"], p["threads"]) for p in pairs] == [("linear-1024x3-t", nproc), ("linear-64x1-t", 1)]
    assert all(len(p["ratios"]) == 1 for p in pairs)


def test_a_repeated_thread_value_is_paired_once(tmp_path):
    # 1,1,all would otherwise pool two values' rounds into one list (2R "rounds", and the
    # scaling dividing one round's rate by another round's).
    sys.path.insert(0, PEERS)
    try:
        from paired_ratio import chosen_entries
    finally:
        sys.path.remove(PEERS)
    (tmp_path / "t.suite").write_text("mlp: --model mlp --layers 4,3,2 --samples 100 --batch 10 "
                                      "--backends cpu-omp --threads 1,1,all,1\n")
    entries, _ = chosen_entries(str(tmp_path / "t.suite"), None, str(tmp_path))
    assert [(name, values) for name, _, values in entries] == [("mlp", ["1", "all"])]


def import_paired_ratio():
    sys.path.insert(0, PEERS)
    try:
        import paired_ratio  # noqa: PLC0415
    finally:
        sys.path.remove(PEERS)
    return paired_ratio


def fake_rounds(monkeypatch, tmp_path, shares, rounds=3, limit=0.01, fail=(), rc=0):
    """Runs paired_ratio's entry loop with pair_round replaced: the k-th call (one round
    of one thread value) reports disturbance shares[k] (a number for both runs, or a
    (cpu-omp, torch-cpu) pair) and rates that encode k, so the test can tell which
    rounds a median took; calls in `fail` lose their torch-cpu run. Returns (paired.json,
    calls made)."""
    pr = import_paired_ratio()
    calls = []

    def fake_pair_round(args, flags, name, t, export_dir, csv_path, r):
        k = len(calls)
        calls.append((r, t))
        threads = 1 if t == "1" else 2
        c, th = shares[k] if isinstance(shares[k], tuple) else (shares[k], shares[k])
        # cpu-omp 100 + k (2 threads: 200 + k), torch-cpu 100: the ratio names the call.
        got = {"cpu-omp": float(threads * 100 + k), "torch-cpu": None if k in fail else 100.0}
        return got, threads, [f"call {k} failed"] if k in fail else [], {"cpu-omp": c, "torch-cpu": th}

    monkeypatch.setattr(pr, "pair_round", fake_pair_round)
    monkeypatch.setattr(pr.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0))
    args = pr.parse_args(["paired_ratio.py", "--suite", "x", "--results", str(tmp_path), "--rounds", str(rounds),
                          "--max-disturbance", str(limit)])
    assert pr.pair_all(args, [("mlp", [], ["1", "all"])]) == rc
    return json.loads((tmp_path / "paired.json").read_text()), calls


def per_call(rounds, share_of):
    """Shares in call order: round r runs "1" then "all" (r even) or the reverse."""
    return [share_of(r, t) for r in range(rounds) for t in (["1", "all"] if r % 2 == 0 else ["all", "1"])]


def test_disturbed_rounds_are_repeated_and_left_out(monkeypatch, tmp_path):
    # Two calls a round (1 then all, all then 1, ...). Round 2's "all" run (call 2) and
    # round 4's "1" run (call 7) are disturbed: rounds go on until 3 rounds are calm at
    # every thread value, so 5 run; each median leaves out only its own disturbed runs.
    shares = [0.0, 0.005, 0.2, 0.0, 0.0, 0.01, 0.0, 0.3, 0.0, None]
    doc, calls = fake_rounds(monkeypatch, tmp_path, shares)
    assert [r for r, _ in calls] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert doc["max_disturbance"] == 0.01
    one, two = doc["pairs"]
    # Thread value "1" ran in calls 0, 3, 4, 7, 8; "all" in 1, 2, 5, 6, 9.
    assert one["disturbance"] == [0.0, 0.0, 0.0, 0.3, 0.0]
    assert one["ratios"] == [1.00, 1.03, 1.04, 1.08] and one["counted"] == [0, 1, 2, 4]  # call 7 (0.3) left out
    assert (one["rounds_run"], one["rounds_used"], one["disturbed"]) == (5, 4, False)
    assert two["disturbance"] == [0.005, 0.2, 0.01, 0.0, None]  # 0.01 is at the limit: counts; None: unknown
    assert two["ratios"] == [2.01, 2.05, 2.06, 2.09] and two["counted"] == [0, 2, 3, 4]
    assert one["cpu_omp_samples_per_s"] == [100, 103, 104, 107, 108]  # every round kept in the file
    # The scaling counts a round only where both cpu-omp runs were calm: rounds 1, 3, 5.
    [sc] = doc["scaling"]
    assert sc["ratios"] == [201 / 100, 205 / 104, 209 / 108] and sc["counted"] == [0, 2, 4]
    assert (sc["rounds_run"], sc["rounds_used"], sc["disturbed"]) == (5, 3, False)


def test_the_scaling_is_judged_by_cpu_omps_runs_alone(monkeypatch, tmp_path):
    # Round 1's torch-cpu run at "all" is disturbed, its cpu-omp run is not: the round is
    # repeated and leaves out that ratio, but the scaling (cpu-omp ÷ cpu-omp) keeps it.
    doc, calls = fake_rounds(monkeypatch, tmp_path,
                             per_call(4, lambda r, t: (0.0, 0.5) if (r, t) == (0, "all") else 0.0))
    assert len(calls) == 8
    one, two = doc["pairs"]
    assert one["counted"] == [0, 1, 2, 3] and two["counted"] == [1, 2, 3]
    assert two["disturbance"][0] == 0.5
    [sc] = doc["scaling"]
    assert sc["counted"] == [0, 1, 2, 3] and sc["disturbance"] == [0.0] * 4


def test_rounds_stop_at_twice_the_count_and_then_every_round_counts(monkeypatch, tmp_path):
    # Every "all" run disturbed: 2 x 3 rounds run, none calm at "all", so its median (and
    # the scaling's) is over every round, marked disturbed; "1" keeps its calm rounds.
    doc, calls = fake_rounds(monkeypatch, tmp_path, per_call(6, lambda r, t: 0.5 if t == "all" else 0.0))
    assert len(calls) == 12
    one, two = doc["pairs"]
    assert (one["rounds_run"], one["rounds_used"], one["disturbed"]) == (6, 6, False)
    assert (two["rounds_run"], two["rounds_used"], two["disturbed"]) == (6, 6, True)
    assert len(two["ratios"]) == 6
    assert doc["scaling"][0]["disturbed"] is True


@pytest.mark.parametrize("rounds,calm,fallback", [(5, 3, False), (5, 2, True), (2, 2, False), (2, 1, True),
                                                  (1, 1, False)])
def test_three_undisturbed_rounds_are_enough_and_two_are_not(monkeypatch, tmp_path, rounds, calm, fallback):
    # "all" is calm in its first `calm` rounds only; a median needs min(3, rounds) of them.
    doc, _ = fake_rounds(monkeypatch, tmp_path,
                         per_call(2 * rounds, lambda r, t: 0.0 if t == "1" or r < calm else 0.5), rounds=rounds)
    two = doc["pairs"][1]
    assert two["disturbed"] is fallback
    assert two["counted"] == (list(range(two["rounds_run"])) if fallback else list(range(calm)))


def test_a_failed_run_is_not_counted_and_not_repeated(monkeypatch, tmp_path):
    # Call 0 ("1", round 1) loses its torch-cpu run: that round has no ratio and is not
    # calm, and once a run failed no extra rounds run (3, not up to 6), exit 1.
    doc, calls = fake_rounds(monkeypatch, tmp_path, [0.0] * 12, fail={0}, rc=1)
    assert len(calls) == 6
    one, two = doc["pairs"]
    assert one["failures"] == ["call 0 failed"] and one["torch_cpu_samples_per_s"][0] is None
    assert one["ratios"] == [1.03, 1.04] and one["counted"] == [1, 2]
    assert one["disturbed"] is True  # 2 rounds ran both: fewer than 3, so every one that ran (and says so)
    assert two["counted"] == [0, 1, 2] and two["disturbed"] is False


def test_a_runs_share_is_its_rows_unless_the_row_timed_too_little(monkeypatch, tmp_path):
    """pair_round reads each run's share from the row it appended (others + steal over the
    timed epochs), from the whole process where the row has none or timed under 0.5 s
    (10 ms ticks), and returns both runs' shares."""
    pr = import_paired_ratio()
    csv_path = tmp_path / "paired.csv"
    cols = ["backend", "status", "samples_per_s", "threads", "train_time_s", "others_cpu_share", "steal_share"]
    rows_by = {"cpu-omp": ["cpu-omp", "ok", "500", "2", "1.5", "0.004", "0.012"],
               "torch-cpu": ["torch-cpu", "ok", "250", "2", "0.2", "0.3", "0.3"]}

    def fake_run(cmd, **_):
        backend = "cpu-omp" if cmd[1] == "run" else "torch-cpu"
        new = not csv_path.exists()
        with open(csv_path, "a", encoding="utf-8") as f:
            f.write((",".join(cols) + "\n" if new else "") + ",".join(rows_by[backend]) + "\n")
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(pr.subprocess, "run", fake_run)
    monkeypatch.setattr(pr.disturbance, "share_between", lambda a, b: 0.07)  # the whole process's figure
    args = pr.parse_args(["paired_ratio.py", "--suite", "x", "--results", str(tmp_path), "--trainbench", "tb"])
    got, threads, failures, shares = pr.pair_round(args, [], "w", "all", str(tmp_path), str(csv_path), 0)
    assert got == {"cpu-omp": 500.0, "torch-cpu": 250.0} and threads == 2 and failures == []
    assert shares["cpu-omp"] == 0.004 + 0.012  # its row: 1.5 s timed
    assert shares["torch-cpu"] == 0.07  # 0.2 s timed: too short to judge, the process's figure
    rows_by["cpu-omp"][5:7] = ["", ""]  # no cells (a row without /proc/stat), then a failed run
    rows_by["torch-cpu"][1] = "failed: diverged"
    got, _, failures, shares = pr.pair_round(args, [], "w", "all", str(tmp_path), str(csv_path), 1)
    assert got["torch-cpu"] is None and failures == ["round 2 torch-cpu: failed: diverged"]
    assert shares == {"cpu-omp": 0.07, "torch-cpu": 0.07}
    assert pr.worst([None, 0.2, 0.1]) == 0.2 and pr.worst([None, None]) is None


def test_disturbance_share_from_proc_stat_lines(tmp_path):
    sys.path.insert(0, PEERS)
    try:
        import disturbance  # noqa: PLC0415
    finally:
        sys.path.remove(PEERS)
    hz = os.sysconf("SC_CLK_TCK")
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal (ticks): busy 100+0+50+0+10 = 160.
    stat.write_text(f"cpu  {100} 0 {50} 900 5 0 {10} {20} 0 0\ncpu0 1 2 3\n")
    a = disturbance.snapshot(str(stat))
    assert a["busy_s"] == 160 / hz and a["steal_s"] == 20 / hz
    b = dict(a, wall_s=a["wall_s"] + 2.0, cpus=2, busy_s=a["busy_s"] + 0.5, steal_s=a["steal_s"] + 0.04,
             own_s=a["own_s"] + 0.42)
    # Others: 0.5 busy - 0.42 own = 0.08 s; steal 0.04 s; of 2 s x 2 CPUs = 3%.
    assert abs(disturbance.share_between(a, b) - 0.03) < 1e-12
    # Own time above the busy time (tick rounding): others clamp at 0.
    assert abs(disturbance.share_between(a, dict(b, own_s=a["own_s"] + 0.9)) - 0.01) < 1e-12
    assert disturbance.share_between(None, b) is None and disturbance.share_between(a, dict(a)) is None
    for bad in ("intr 1 2 3\n", "cpu  1 2 x 4 5 6 7 8\n", "cpu  1 2 3\n"):
        stat.write_text(bad)
        assert disturbance.snapshot(str(stat)) is None, bad
    assert disturbance.snapshot(str(tmp_path / "none")) is None


def test_a_short_repetition_is_judged_since_the_first_or_not_at_all():
    sys.path.insert(0, PEERS)
    try:
        import disturbance  # noqa: PLC0415
    finally:
        sys.path.remove(PEERS)
    snap = {"busy_s": 0.0, "steal_s": 0.0, "own_s": 0.0, "cpus": 2}
    first, before = dict(snap, wall_s=10.0), dict(snap, wall_s=10.3)
    # Its own window when that lasts MIN_JUDGED_S (0.5 s) or more.
    assert disturbance.judged_from(first, before, dict(snap, wall_s=10.8)) is before
    # Shorter: from the first timed repetition's start, when that window is long enough.
    assert disturbance.judged_from(first, before, dict(snap, wall_s=10.5)) is first
    assert disturbance.judged_from(None, before, dict(snap, wall_s=10.5)) is None
    # Even that too short: unknown, and the row's cells stay empty (a 4 ms window whose
    # neighbour took one 10 ms tick would read 100%).
    after = dict(snap, wall_s=10.304, busy_s=0.01)
    assert disturbance.judged_from(first, before, after) is None
    assert disturbance.row_cells(disturbance.judged_from(first, before, after), after) == \
        {"others_cpu_share": "", "steal_share": "", "disturbed": ""}
    assert disturbance.row_cells(before, after)["disturbed"] == "true"
