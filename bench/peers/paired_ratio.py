#!/usr/bin/env python3
"""cpu-omp against torch-cpu in alternating rounds: for each chosen suite entry and
each of its --threads values, R rounds of one cpu-omp repetition (`trainbench run
--reps 1`) and one torch-cpu repetition (pytorch_train.py --reps 1) back to back, the
order flipped every round, and the ratio cpu-omp samples/s / torch-cpu samples/s of
each round. The median of those ratios is what `make perf` reports beside the
suite's ratio of medians.

Why: the suite runs all of cpu-omp's repetitions, and run_peers.py all of PyTorch's
minutes later; on a machine whose speed drifts (a VM: torch-cpu's median moved by 42%
between two quiet runs, docs/performance.md) that ratio compares two moments. A ratio
taken within each round, in either order, cancels what drifts slower than a round.

An entry's thread values take turns within each round too (1 then all, then all then
1), so each round also gives cpu-omp's scaling = samples/s at the most threads ÷ at 1
thread, both taken within seconds: paired.json's "scaling", which perf_summary.py
judges the small MLP's 1.7x target by.

Disturbed rounds are repeated and left out. Each run's disturbance is the share of the
host's CPU time that other processes took or the hypervisor stole while it ran: its
row's others_cpu_share + steal_share (over its timed epochs; trainbench and
pytorch_train.py both write them), else the same measure around the whole process
(bench/peers/disturbance.py), which is also used when the timed epochs were shorter than
0.5 s (/proc/stat's 10 ms ticks are too coarse there). Rounds go on until --rounds of them
ran every run at or under --max-disturbance (default 1%), or twice --rounds in all (no
extra rounds once a run has failed). Each ratio median is taken over the rounds in which
both its runs ran undisturbed, the scaling's over those in which both cpu-omp runs did;
with fewer than min(3, --rounds) such rounds, over every round that ran, marked
`"disturbed": true`. paired.json keeps every round's rates and disturbance, and lists the
rounds each median counted. Without /proc/stat nothing is judged: --rounds rounds.

Rows (both backends, every round) go to RESULTS_DIR/paired.csv, the ratios to
RESULTS_DIR/paired.json (written whole: a temporary file, then rename).

Which entries: every thread value of the entries running cpu-omp whose model is mlp;
and of the other cpu-omp entries (the linear widths) each thread value whose ratio of
medians in RESULTS_DIR/results.csv (cpu-omp ÷ torch-cpu, as perf_summary.py computes
it: the suite and run_peers.py have run) lies within 15% of its perf_summary.py target
either way. There a run's drift decides the verdict (torch-cpu's medians moved by up
to 30% between runs on a VM); far from the line it does not, and each linear round
costs about 5 s. Without results.csv, or without torch-cpu rows, only the MLPs.

Usage: paired_ratio.py --suite FILE --results RESULTS_DIR [--trainbench PATH]
                       [--rounds 5] [--max-disturbance 0.01] [--only NAME,...] [--python PY]
  --only: entry names, every thread value (instead of the choice above).
Exit codes: 0 done (or skipped: without an importable torch it says so, writes
nothing); 1 a run failed (its round has no ratio) or paired.json could not be written;
2 bad input, or another paired_ratio.py writing into the same folder; 130 interrupted
(paired.csv keeps its whole rows, paired.json is not written).
"""

import argparse
import csv
import fcntl
import os
import shutil
import statistics
import subprocess
import sys

import disturbance
from run_peers import SuiteError, parse_suite, split_flags, torch_importable, without
from json_out import write_json
from perf_summary import TARGETS, groups

HERE = os.path.dirname(os.path.abspath(__file__))
NEAR = 0.15  # a non-MLP thread value is paired when |ratio / target - 1| < NEAR


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", required=True)
    ap.add_argument("--results", required=True, help="folder for paired.csv and paired.json")
    ap.add_argument("--trainbench", default=os.environ.get("TB_TRAINBENCH", "build/trainbench"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-disturbance", type=float, default=0.01,
                    help="a round whose run lost more than this share of the host's CPU time to other processes "
                         "and steal is repeated and left out (0 to 1; 1 judges nothing)")
    ap.add_argument("--only", help="comma list of entry names (default: the MLP entries running cpu-omp)")
    ap.add_argument("--python", default=sys.executable, help="interpreter for pytorch_train.py")
    return ap.parse_args(argv[1:])


def model_of(flags):
    """The last --model value among an entry's flags (`--model mlp` or `--model=mlp`)."""
    model = None
    for i, tok in enumerate(flags):
        if tok == "--model" and i + 1 < len(flags):
            model = flags[i + 1]
        elif tok.startswith("--model="):
            model = tok.split("=", 1)[1]
    return model


def suite_ratios(results_dir):
    """{(workload, threads): cpu-omp median samples/s ÷ torch-cpu's} from
    results_dir/results.csv ({} without it), and {workload: the largest cpu-omp thread
    count} (what the suite's "all" ran as)."""
    try:
        with open(os.path.join(results_dir, "results.csv"), encoding="utf-8", newline="") as f:
            g, _ = groups(list(csv.DictReader(f)))
    except (OSError, csv.Error, UnicodeDecodeError):
        return {}, {}
    ratios, widest = {}, {}
    for (w, backend, t), ours in g.items():
        if backend != "cpu-omp":
            continue
        widest[w] = max(widest.get(w, 0), t)
        if (w, "torch-cpu", t) in g:
            ratios[(w, t)] = statistics.median(ours) / statistics.median(g[(w, "torch-cpu", t)])
    return ratios, widest


def near_the_line(name, thread_values, ratios, widest):
    """The thread values of entry `name` whose suite ratio is within NEAR of its target,
    each with a line saying why."""
    need = next((n for prefix, _, n in TARGETS if name.startswith(prefix)), None)
    chosen = []
    for tv in thread_values:
        t = widest.get(name) if tv == "all" else int(tv) if tv.isdigit() else None
        ratio = ratios.get((name, t))
        if need is not None and ratio is not None and abs(ratio / need - 1) < NEAR:
            chosen.append((tv, f"{name} threads {tv}: suite ratio {ratio:.2f}x, target {need:g}x "
                               f"(within {NEAR:.0%})"))
    return chosen


def chosen_entries(suite, only, results_dir):
    """[(name, export flags, thread values)] of the entries to pair (see the top), and
    a line for each non-MLP thread value chosen, saying why."""
    out, notes = [], []
    ratios, widest = suite_ratios(results_dir) if only is None else ({}, {})
    for name, tokens in parse_suite(suite):
        flags, lists = split_flags(tokens)
        backends = (lists.get("--backends") or lists.get("--backend") or "cpu-omp").split(",")
        if "cpu-omp" not in backends:
            continue
        # Each value once, in order: a repeat (1,1,all) would pool two values' rounds.
        thread_values = list(dict.fromkeys((lists.get("--threads") or "all").split(",")))
        if only is not None:
            if name not in only:
                continue
        elif model_of(flags) != "mlp":
            near = near_the_line(name, thread_values, ratios, widest)
            notes += [f"paired_ratio.py: pairing {why}" for _, why in near]
            thread_values = [tv for tv, _ in near]
            if not thread_values:
                continue
        out.append((name, flags, thread_values))
    return out, notes


def count_rows(path):
    if not os.path.isfile(path):
        return 0
    with open(path, encoding="utf-8", newline="") as f:
        return sum(1 for _ in csv.DictReader(f))


def appended_row(path, before, backend):
    """(the one `backend` row a run appended after the first `before` rows, None), or
    (None, why not)."""
    if not os.path.isfile(path):
        return None, "no CSV written"
    with open(path, encoding="utf-8", newline="") as f:
        rows = [r for r in list(csv.DictReader(f))[before:] if r["backend"] == backend]
    if len(rows) != 1:
        return None, f"{len(rows)} {backend} rows appended (expected 1)"
    if rows[0]["status"] != "ok":
        return None, rows[0]["status"]
    return rows[0], None


def ratio_summary(ours, theirs):
    """Per-round ratios of the rounds where both ran, their median, min and max."""
    ratios = [o / t for o, t in zip(ours, theirs) if o is not None and t is not None and t > 0]
    if not ratios:
        return {"ratios": [], "median_ratio": None, "min_ratio": None, "max_ratio": None}
    return {"ratios": ratios, "median_ratio": statistics.median(ratios), "min_ratio": min(ratios),
            "max_ratio": max(ratios)}


def quiet(share, limit):
    """Whether a run (or round) of disturbance `share` counts: unknown (None) counts."""
    return share is None or share <= limit


def usable(ours, theirs, i):
    """Whether round i has both rates (a failed run gives none)."""
    return ours[i] is not None and theirs[i] is not None and theirs[i] > 0


def judged(ours, theirs, shares, limit, rounds):
    """A series' per-round disturbance (shares) and ratio_summary over its rounds that ran
    both sides at or under `limit`, or over every round that ran both when fewer than
    min(3, rounds) did (marked disturbed), with the indices of the rounds counted."""
    ran = [i for i in range(len(shares)) if usable(ours, theirs, i)]
    keep = [i for i in ran if quiet(shares[i], limit)]
    fallback = len(keep) < min(3, rounds)
    keep = ran if fallback else keep
    return {"disturbance": shares, **ratio_summary([ours[i] for i in keep], [theirs[i] for i in keep]),
            "rounds_run": len(shares), "rounds_used": len(keep), "counted": keep, "disturbed": fallback}


def main(argv):
    args = parse_args(argv)
    if args.rounds < 1:
        print(f"paired_ratio.py: --rounds {args.rounds}: allowed values are integers >= 1", file=sys.stderr)
        return 2
    if not 0 <= args.max_disturbance <= 1:  # also refuses nan
        print(f"paired_ratio.py: --max-disturbance {args.max_disturbance}: allowed values are 0 to 1 (a share "
              "of the host's CPU time)", file=sys.stderr)
        return 2
    for p, what in ((args.suite, "suite file"), (args.trainbench, "trainbench")):
        if not os.path.isfile(p):
            print(f"paired_ratio.py: {p}: no such {what}", file=sys.stderr)
            return 2
    if not os.path.isdir(args.results):
        print(f"paired_ratio.py: {args.results}: no such folder", file=sys.stderr)
        return 2
    only = set(args.only.split(",")) if args.only else None
    try:
        entries, notes = chosen_entries(args.suite, only, args.results)
    except (SuiteError, OSError) as e:  # bad input, as run_peers.py says it: one line, exit 2
        print(f"paired_ratio.py: {e}", file=sys.stderr)
        return 2
    if only is not None and len(entries) != len(only):
        missing = sorted(only - {e[0] for e in entries})
        print(f"paired_ratio.py: --only: no cpu-omp entry named {', '.join(missing)} in {args.suite}",
              file=sys.stderr)
        return 2
    if not torch_importable(args.python):
        print("paired_ratio.py: skipped: python3-torch not importable (nothing to pair cpu-omp with)")
        return 0
    for note in notes:
        print(note, flush=True)
    # One writer per folder: rounds are paired by the rows each run appends to paired.csv.
    # (The lock file stays: removing it would let a third run lock a new one beside a
    # second that still holds the old.)
    with open(os.path.join(args.results, ".paired.lock"), "w", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            print(f"paired_ratio.py: another paired_ratio.py is writing into {args.results}; wait for it to end "
                  "or use another --results folder", file=sys.stderr)
            return 2
        return locked_main(args, entries)


def locked_main(args, entries):
    try:
        return pair_all(args, entries)
    except KeyboardInterrupt:
        print("paired_ratio.py: interrupted: paired.csv keeps the rows written so far (each whole); "
              "paired.json not written", file=sys.stderr)
        return 130
    except OSError as e:
        print(f"paired_ratio.py: {e.filename or args.results}: {e.strerror}: paired.json not written",
              file=sys.stderr)
        return 1


def pair_all(args, entries):
    """The rounds of every entry and thread count; writes paired.json. Returns the exit code."""
    csv_path = os.path.join(args.results, "paired.csv")
    pairs, scaling, rc = [], [], 0
    for name, flags, thread_values in entries:
        export_dir = os.path.join(args.results, f".paired-export-{name}")
        shutil.rmtree(export_dir, ignore_errors=True)
        try:
            cmd = [args.trainbench, "export", *without(flags, "--workload"), "--workload", name, "--out", export_dir]
            if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
                print(f"paired_ratio.py: {name}: export failed: {' '.join(cmd)}", file=sys.stderr)
                rc = 1
                continue
            runs, failed = entry_rounds(args, flags, name, thread_values, export_dir, csv_path)
            rc = 1 if failed else rc
            limit = args.max_disturbance
            for t in thread_values:
                run = runs[t]
                pairs.append({"workload": name, "threads": run["threads"] if run["threads"] is not None else t,
                              "cpu_omp_samples_per_s": run["cpu-omp"], "torch_cpu_samples_per_s": run["torch-cpu"],
                              **judged(run["cpu-omp"], run["torch-cpu"],
                                       [worst(d.values()) for d in run["disturbance"]], limit, args.rounds),
                              "failures": run["failures"]})
            one = [t for t in thread_values if runs[t]["threads"] == 1]
            most = max((runs[t]["threads"] or 0, t) for t in thread_values)
            if one and most[0] > 1:
                # cpu-omp ÷ cpu-omp: only cpu-omp's runs judge the round.
                lo, hi = runs[one[0]], runs[most[1]]
                shares = [worst([a["cpu-omp"], b["cpu-omp"]]) for a, b in zip(lo["disturbance"], hi["disturbance"])]
                scaling.append({"workload": name, "threads": [1, most[0]],
                                **judged(hi["cpu-omp"], lo["cpu-omp"], shares, limit, args.rounds)})
        finally:
            shutil.rmtree(export_dir, ignore_errors=True)
    write_json(os.path.join(args.results, "paired.json"), {
        "rounds": args.rounds,
        "max_disturbance": args.max_disturbance,
        "method": "per round: one cpu-omp repetition and one torch-cpu repetition back to back (own processes, "
                  "order flipped every round); ratio = cpu-omp samples/s / torch-cpu samples/s of the round",
        "disturbance_method": "per round and thread value: the larger of its two runs' share of the host's CPU time "
                              "that other processes took plus what the hypervisor stole (/proc/stat): the row's "
                              "others_cpu_share + steal_share, over its timed epochs, else the same measure "
                              "around the whole process (also where the timed epochs lasted under 0.5 s); null "
                              "where unknown. Rounds repeat until `rounds` have every run at or under "
                              "max_disturbance, or twice `rounds` ran (no repeats after a failed run); each median is "
                              "over the rounds whose own runs ran and stayed under it (`counted`, 0-based; "
                              "rounds_used of rounds_run), or over every round that ran (disturbed: true) when "
                              "fewer than min(3, rounds) did",
        "units": {"samples_per_s": "samples/s", "ratio": "cpu-omp / torch-cpu", "disturbance": "share of the "
                  "host's CPU time (wall x CPUs), 0 to 1"},
        "pairs": pairs,
        "scaling_method": "per round: cpu-omp samples/s at the entry's most threads / at 1 thread, both "
                          "measured in that round (thread counts alternate in order every round), over the rounds "
                          "where both cpu-omp runs were undisturbed (disturbance: the larger of their two shares)",
        "scaling": scaling})
    for p in pairs:
        m = p["median_ratio"]
        print(f"paired {p['workload']} t{p['threads']}: median ratio "
              f"{'n/a' if m is None else f'{m:.2f}x'} over {len(p['ratios'])} rounds{used_text(p)}")
    for sc in scaling:
        m = sc["median_ratio"]
        print(f"paired {sc['workload']} scaling t{sc['threads'][1]} / t1: median "
              f"{'n/a' if m is None else f'{m:.2f}x'} over {len(sc['ratios'])} rounds{used_text(sc)}")
    return rc


def used_text(summary):
    if summary["disturbed"]:
        return f" (every round that ran: too few of {summary['rounds_run']} undisturbed)"
    if summary["rounds_used"] < summary["rounds_run"]:
        return f" ({summary['rounds_run'] - summary['rounds_used']} of {summary['rounds_run']} disturbed or failed)"
    return ""


def entry_rounds(args, flags, name, thread_values, export_dir, csv_path):
    """Rounds of one entry until args.rounds of them ran every run undisturbed, or
    2 × args.rounds ran (args.rounds once a run has failed: a failing run is not
    repeated for its noise). Returns ({thread value: {"cpu-omp": [samples/s or None per
    round], "torch-cpu": [...], "disturbance": [{backend: share or None} per round],
    "threads": cpu-omp's thread count, "failures": [lines]}}, whether a run failed)."""
    runs = {t: {"cpu-omp": [], "torch-cpu": [], "disturbance": [], "threads": None, "failures": []}
            for t in thread_values}
    quiet_rounds, r, failed = 0, 0, False
    while quiet_rounds < args.rounds and r < (args.rounds if failed else 2 * args.rounds):
        # The thread values alternate too (1, all; then all, 1): each round measures
        # cpu-omp at every thread count within seconds, so their ratio (the scaling)
        # is taken in one moment of the machine, like cpu-omp ÷ torch-cpu.
        calm = True
        for t in thread_values if r % 2 == 0 else list(reversed(thread_values)):
            got, threads, failures, shares = pair_round(args, flags, name, t, export_dir, csv_path, r)
            run = runs[t]
            for backend, sps in got.items():
                run[backend].append(sps)
            run["disturbance"].append(shares)
            run["threads"] = threads if threads is not None else run["threads"]
            run["failures"] += failures
            failed = failed or bool(failures)
            calm = calm and not failures and quiet(worst(shares.values()), args.max_disturbance)
        quiet_rounds += calm
        r += 1
    return runs, failed


def worst(shares):
    """The largest of the known shares, None when none is known."""
    known = [v for v in shares if v is not None]
    return max(known) if known else None


def row_share(row, around):
    """A run's disturbance: its row's others_cpu_share + steal_share, taken over its timed
    epochs, when those lasted disturbance.MIN_JUDGED_S or more; else `around`, the same
    measure over the whole process (start-up and data generation dilute it, but /proc/stat
    counts 10 ms ticks: one tick is 3% of a 0.16 s window on 2 CPUs, which the linear
    entries' single repetitions are)."""
    try:
        if float(row["train_time_s"]) >= disturbance.MIN_JUDGED_S:
            return min(1.0, float(row["others_cpu_share"]) + float(row["steal_share"]))
    except (TypeError, KeyError, ValueError):
        pass
    return around


def pair_round(args, flags, name, t, export_dir, csv_path, r):
    """Round r of entry `name` at thread value t: one cpu-omp and one torch-cpu
    repetition, in the order the round's parity says. Returns ({backend: samples/s, None
    for a failed run}, cpu-omp's thread count or None, [a line per failed run], {backend:
    its run's disturbance share (row_share), None where unknown})."""
    # Each flag once (trainbench refuses a repeat): the suite's --reps gives way to one repetition.
    mine = without(flags, "--workload", "--reps", "--no-ceilings")
    cmds = {"cpu-omp": [args.trainbench, "run", *mine, "--workload", name, "--backend", "cpu-omp",
                        "--threads", t, "--reps", "1", "--no-ceilings", "--out", csv_path],
            "torch-cpu": [args.python, os.path.join(HERE, "pytorch_train.py"), export_dir, "--results", csv_path,
                          "--devices", "cpu", "--threads", t, "--reps", "1"]}
    got, threads, failures, shares = {}, None, [], {}
    for backend in list(cmds) if r % 2 == 0 else list(reversed(cmds)):
        before = count_rows(csv_path)
        start = disturbance.snapshot()
        subprocess.run(cmds[backend], stdout=subprocess.DEVNULL)
        around = disturbance.share_between(start, disturbance.snapshot())
        row, failed = appended_row(csv_path, before, backend)
        shares[backend] = row_share(row, around)
        got[backend] = None if row is None else float(row["samples_per_s"])
        if row is None:
            failures.append(f"round {r + 1} {backend}: {failed}")
        elif backend == "cpu-omp":
            threads = int(row["threads"])
    share = worst(shares.values())
    note = "" if share is None else f", disturbance {share:.1%}" + (
        "" if quiet(share, args.max_disturbance) else " (disturbed: left out)")
    print(f"paired {name} t{t} round {r + 1}: cpu-omp {got['cpu-omp'] or 'failed'}, "
          f"torch-cpu {got['torch-cpu'] or 'failed'} samples/s{note}", flush=True)
    return got, threads, failures, shares


if __name__ == "__main__":
    sys.exit(main(sys.argv))
