#!/usr/bin/env python3
"""Issue #18's targets from one `make perf` folder: cpu-omp against PyTorch (same
workload, same thread count, medians over repetitions) and, for the large MLP,
cpu-omp's GEMM rate against the machine's sgemm rate measured in the same run.

  small linear    (linear-64x1-*)        cpu-omp >= 4    x torch-cpu samples/s
  linear 1024->O  (linear-1024xO-*)      cpu-omp >= 2    x torch-cpu, every output width O
  small MLP       (mlp-784x256x256x10-*) cpu-omp >= 1.2  x torch-cpu at every thread count,
                                         and on a 2-core machine 2 threads >= 1.7 x 1 thread
  large MLP       (mlp-1024x4096x...)    cpu-omp >= 1.05 x torch-cpu, and its GEMM rate
                                         >= 100% of sgemm's

A target counts as met when the ratio reaches it; the margin column says by how much
(ratio / target - 1): a margin under 5% is marked thin, since the next CPU or a noisy
minute can take it away. A figure next to its target gets the decimals that keep it on
its verdict's side (1.049x and -0.1% for a miss, never 1.05x and -0%).

Bound: for each target row, the best ratio an implementation could reach here:
min(FMA ceiling x 1e9 / GEMM FLOPs per sample, triad bandwidth x 4/3 x 1e9 / 4·D input
bytes per sample) / torch-cpu samples/s, the ceilings from env.json (measured in the
same run, 1 thread or all; the FMA one raised to the fastest GEMM rate the folder
measured at that thread count where it is below it -- its short trials then caught a
slow moment; a miss there is not proven). A target above the FMA bound is out of reach
on this CPU, unless cpu-omp's own training at that thread count ran its GEMM FLOPs above
the ceiling: then the ceiling read low, and a miss there is said to be not proven. The
memory part is an estimate (a read-only stream may beat triad's count by 4/3).

cpu-omp's GEMM rate = samples/s x the step's GEMM FLOPs per sample (forward 2·in·out,
dW 2·in·out, dA 2·in·out except for the first layer, summed over layers): every
non-GEMM cost of the step (bias, ReLU, loss, SGD) counts against it. The sgemm rate
comes from another process minutes away, on a machine whose speed drifts; so the GEMMs
alone are also compared in one process, cpu-omp's and the BLAS's calls alternating
(gemm-vs-blas.json from bench/micro/gemm_vs_blas.cpp): share = sum of the BLAS's
median seconds / sum of cpu-omp's over the step's GEMMs, target >= 100% as well.
Likewise the MLP ratios: the table's ratio of medians compares cpu-omp's repetitions
with PyTorch's minutes later; paired.json (bench/peers/paired_ratio.py) holds rounds of
one repetition each, back to back, and its table gives the median of the per-round
ratios against the same targets, over the rounds no neighbour or hypervisor disturbed
(paired_ratio.py repeats those; the rounds cell says how many counted of how many ran).
A paired verdict is decided when the 90% confidence interval of the median per-round
ratio (distribution-free, for independent rounds with one median: the k-th smallest and
k-th largest of the n rounds, k the largest with 1 - 2 P(Binomial(n, 1/2) < k) >= 0.90;
5 rounds at least) lies wholly on one side of the target; where it holds the target,
the rounds' spread on this machine could put the verdict either way, and the tables
and the verdict say so.

Usage: perf_summary.py RESULTS_DIR   (reads results.csv, sgemm*.json -- the fastest
counts --, cpu_usage.txt and loadavg.txt if present; prints a Markdown table and
writes RESULTS_DIR/perf_summary.md)
"""

import collections
import csv
import json
import math
import os
import statistics
import sys

from json_out import write_text

TARGETS = [  # (workload prefix, label, required ratio vs torch-cpu)
    ("linear-64x1-", "small linear 64->1", 4.0),
    ("linear-1024x", "linear 1024->O", 2.0),
    ("mlp-784x256x256x10-", "small MLP 784-256-256-10", 1.2),
    ("mlp-1024x4096x4096x4096x1000-", "large MLP 1024-4096-4096-4096-1000", 1.05),
]
SMALL_MLP_SCALING = 1.7  # cpu-omp 2 threads / 1 thread, on a machine whose "all" is 2 threads
SGEMM_SHARE = 1.0
THIN_MARGIN = 0.05       # a target met by less than this is marked thin
RAISE_WARN = 0.15        # an FMA ceiling this far below a measured GEMM rate is called wrong
OTHERS_MAX = 0.05  # other processes' share of the CPUs above which a run is flagged
COVERAGE = 0.90    # confidence of the interval that decides a paired verdict


def decimals(value, thresholds, scale, digits):
    """The fewest decimals, from `digits` up, with which value x scale rounded lies on the
    same side of every threshold as value does: a shown figure never contradicts its
    verdict (1.0488 against >= 1.05 reads 1.049x, not 1.05x; a 0.1% miss not '-0%')."""
    for d in range(digits, 17):  # a float has at most 17 significant digits
        shown = round(value * scale, d)
        if all((shown >= round(t * scale, 9)) == (value >= t) for t in thresholds):
            return d
    return 16


def ratio_text(ratio, need):
    """'1.23×', with more decimals where two would round across the target or the thin mark."""
    return f"{ratio:.{decimals(ratio, (need, need * (1 + THIN_MARGIN)), 1, 2)}f}×"


def share_text(share):
    """A GEMM rate share as '96.3%', with more decimals where one would round across the target."""
    return f"{share:.{decimals(share, (SGEMM_SHARE, SGEMM_SHARE * (1 + THIN_MARGIN)), 100, 1)}%}"


def margin_text(margin):
    """'+8%' or '-25%'; under a percent (or next to the thin mark) with the decimals that keep
    its sign and side visible."""
    return f"{margin:+.{decimals(margin, (0.0, THIN_MARGIN), 100, 0)}%}"


def verdict(ratio, need):
    """'yes', 'yes (thin)' or '**no**', and the margin ratio / need - 1."""
    margin = ratio / need - 1
    if not ratio >= need:  # NaN included
        return "**no**", margin
    return ("yes (thin)" if margin < THIN_MARGIN else "yes"), margin


def share_target(share):
    """'(target ≥ 100%; margin +x%: met)' for a GEMM rate share against SGEMM_SHARE."""
    met, margin = verdict(share, SGEMM_SHARE)
    return (f"(target ≥ {SGEMM_SHARE:.0%}; margin {margin_text(margin)}: "
            f"{'met' if share >= SGEMM_SHARE else 'NOT met'}"
            f"{' (thin)' if met == 'yes (thin)' else ''})")


def span_text(values, need):
    """'[lo–hi]' with the decimals that keep each end on its side of `need` (None: 2)."""
    lo, hi = min(values), max(values)
    if need is None:
        return f"[{lo:.2f}–{hi:.2f}]"
    return f"[{lo:.{decimals(lo, (need,), 1, 2)}f}–{hi:.{decimals(hi, (need,), 1, 2)}f}]"


def median_interval(values, coverage=COVERAGE):
    """(lo, hi, confidence): the narrowest symmetric interval of order statistics
    [x_(k), x_(n+1-k)] of `values` that holds the median their rounds share with
    probability 1 - 2 P(Binomial(n, 1/2) <= k - 1) >= coverage (independent rounds from
    continuous distributions with one median); None when even [min, max] falls short
    (n < 5 at 90%). A verdict it decides is one-sided at (1 + confidence) / 2 or more."""
    v, n, best = sorted(values), len(values), None
    for k in range(1, n // 2 + 1):
        confidence = 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n
        if confidence < coverage:
            break
        best = (v[k - 1], v[n - k], confidence)
    return best


def rounds_for(coverage=COVERAGE):
    """The fewest rounds whose [min, max] reaches `coverage`."""
    return next(n for n in range(1, 64) if 1 - 2 / 2 ** n >= coverage)


def decided(ratios, need):
    """(True when the paired rounds decide the verdict at COVERAGE, the words saying why:
    the interval, and that it holds the target or that the rounds are too few for one)."""
    iv = median_interval(ratios)
    if iv is None:
        return False, (f"{len(ratios)} round{'s' if len(ratios) != 1 else ''} too few for a {COVERAGE:.0%} "
                       f"interval ({rounds_for()} needed)")
    lo, hi, confidence = iv
    span = f"{span_text([lo, hi], need)} ({confidence:.1%} confidence)"
    return (True, span) if lo >= need or hi < need else (False, f"{span} holds the target")


def decided_cell(ratios, need):
    """The paired table's last cell: 'yes: [lo–hi] (c% confidence)' or 'no: why'."""
    sure, why = decided(ratios, need)
    return f"{'yes' if sure else 'no'}: {why}"


def step_flops_per_sample(layers):
    total = 0
    for i in range(len(layers) - 1):
        mac = layers[i] * layers[i + 1]
        total += 2 * mac * (3 if i > 0 else 2)  # forward, dW, and dA except for layer 1
    return total


# Triad's GB/s counts three arrays per element (two read, one written) and not the read
# that allocates the written line, so a read-only stream may run up to 4/3 of it: the
# memory bound below uses that, and is an estimate, not a ceiling.
READ_OVER_TRIAD = 4 / 3


def ceilings(folder):
    """(ceilings, why): ceilings = {threads: (FMA GFLOP/s, triad GB/s)} for 1 thread and
    for all of the machine's threads, from env.json's ceilings.cpu; or (None, why not)."""
    try:
        with open(os.path.join(folder, "env.json"), encoding="utf-8") as f:
            c = json.load(f).get("ceilings")
    except OSError:
        return None, "no env.json in this folder"
    except (ValueError, AttributeError):
        return None, "env.json is not a JSON object"
    if not isinstance(c, dict) or not isinstance(c.get("cpu"), dict):
        why = c.get("omitted") if isinstance(c, dict) else None
        return None, f"env.json has no CPU ceilings ({why or 'not measured: --no-ceilings or TB_CEILINGS=0'})"
    cpu = c["cpu"]
    try:
        out = {1: (float(cpu["fma_gflops_1core"]), float(cpu["triad_gbs_1core"]))}
        out[int(cpu["threads"])] = (float(cpu["fma_gflops_all"]), float(cpu["triad_gbs"]))
    except (KeyError, TypeError, ValueError, OverflowError):
        return None, "env.json's CPU ceilings are incomplete"
    return out, ""


def read_sgemm(path):
    """sgemm_rate.py's JSON with step_gflop_per_s as a positive float, or None when the
    file is unreadable or has no such rate (e.g. cut short by a full disk)."""
    try:
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
        m["step_gflop_per_s"] = float(m["step_gflop_per_s"])
    except (OSError, ValueError, KeyError, TypeError, OverflowError, RecursionError):
        return None
    return m if math.isfinite(m["step_gflop_per_s"]) and m["step_gflop_per_s"] > 0 else None


def measured_gemm_rates(folder):
    """{threads: (GFLOP/s, where)}: the fastest GEMM rate this folder measured at each
    thread count -- per-GEMM medians of gemm-vs-blas.json (ours and the BLAS's, when its
    results passed their check) and of the sgemm*.json files main() reads. No FMA
    ceiling can be below it: one that is caught a slow moment of its short trials.
    cpu-omp's training is left out, so that its row can still be flagged above the bound."""
    best = {}

    def see(threads, rate, where):
        if isinstance(threads, bool) or isinstance(rate, bool):
            return
        try:
            r = float(rate)
            if float(threads) != int(threads) or int(threads) < 1:
                return
            t = int(threads)
        except (TypeError, ValueError, OverflowError):
            return
        if math.isfinite(r) and r > best.get(t, (0.0, ""))[0]:
            best[t] = (r, where)

    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name == "gemm-vs-blas.json":
            try:
                with open(path, encoding="utf-8") as f:
                    doc = json.load(f)
            except (OSError, ValueError, RecursionError):
                continue
            if not isinstance(doc, dict) or doc.get("results_checked") is not True:
                continue  # a result failed its check: no rate to trust
            rates = (("ours_gflop_per_s", "cpu-omp's GEMM"), ("blas_gflop_per_s", "the BLAS's GEMM"))
        elif name.startswith("sgemm") and name.endswith(".json"):
            doc = read_sgemm(path)  # None for a file main() leaves out
            rates = (("gflop_per_s", "the BLAS's GEMM"),)
        else:
            continue
        gemms = doc.get("gemms") if isinstance(doc, dict) else None
        for gm in gemms if isinstance(gemms, list) else []:
            if isinstance(gm, dict):
                for key, who in rates:
                    see(doc.get("threads"), gm.get(key),
                        f"{who} at layer {gm.get('layer', '?')} {gm.get('gemm', '?')} ({name})")
    return best


def bound_table(folder, g, layers_of):
    """Markdown lines: for each target row with a torch-cpu peer, the best ratio an
    implementation could reach on this machine -- its GEMMs at the FMA ceiling, or the
    input rows read at the estimated read bandwidth, whichever bounds, with nothing else
    taking time -- and whether that reaches the target; or one line saying why not."""
    ceil, why = ceilings(folder)
    if ceil is None:
        return [f"\nBound: none: {why}."]
    raised = {}  # threads -> the line saying so
    for t, (rate, where) in sorted(measured_gemm_rates(folder).items()):
        if t in ceil and math.isfinite(ceil[t][0]) and 0 < ceil[t][0] < rate:  # not a failed (0, NaN) one
            up = rate / ceil[t][0] - 1
            warn = (" WARNING: a gap this large suggests env.json's ceiling is wrong; re-run `make perf` on an "
                    "idle machine." if up > RAISE_WARN else "")
            raised[t] = (f"FMA ceiling at {t} thread{'s' if t > 1 else ''}: env.json measured "
                         f"{ceil[t][0]:.1f} GFLOP/s, and {where} ran at {rate:.1f} GFLOP/s in this run, "
                         f"{up:.1%} faster, so the ceiling's short trials caught a slow moment; the bounds at that "
                         "thread count use the measured rate, itself only a lower estimate of the ceiling (a **no** "
                         f"there is not proven).{warn}\n")
            ceil[t] = (rate, ceil[t][1])
    # A cpu-omp training row whose GEMM FLOPs alone ran faster than the FMA ceiling proves
    # that ceiling low (it is left out of the raise above, so that its row is still flagged).
    # (It rests on the FLOP count matching the work, and on a t-thread run using t cores.)
    low = {}  # threads -> (GFLOP/s, workload, whether its row has a bound below)
    for prefix, _, _ in TARGETS:
        for w, t in cpu_omp_rows(g, prefix):
            if t in ceil and w in layers_of and math.isfinite(ceil[t][0]) and ceil[t][0] > 0:
                try:
                    rate = statistics.median(g[(w, "cpu-omp", t)]) * step_flops_per_sample(layers_of[w]) / 1e9
                    listed = ((w, "torch-cpu", t) in g and math.isfinite(ceil[t][1]) and ceil[t][1] > 0
                              and layers_of[w][0] > 0)
                except (OverflowError, ValueError, TypeError):
                    continue  # absurd layer sizes: the table's own row says what it can
                if math.isfinite(rate) and rate > max(ceil[t][0], low.get(t, (0.0,))[0]):
                    low[t] = (rate, w, listed)
    out = ["\nBound on this machine: the ratio cpu-omp would reach if the step's GEMMs ran at the FMA ceiling "
           "(env.json's, or a faster GEMM rate measured in this run, said below) and its input rows were read at "
           "the estimated read bandwidth, with nothing else taking time "
           "(best samples/s = min(FMA GFLOP/s × 1e9 ÷ GEMM FLOP per sample, triad GB/s × 4/3 × 1e9 ÷ input bytes "
           "per sample); best ratio = that ÷ torch-cpu's median samples/s). A target above an FMA bound cannot be "
           "met on this CPU by any implementation, unless marked not proven; the memory bound is an estimate "
           "(marked so where it decides).\n",
           *raised.values(),
           *[f"FMA ceiling at {t} thread{'s' if t > 1 else ''}: cpu-omp's own training at {w} ran the step's "
             f"GEMM FLOPs at {rate:.1f} GFLOP/s (samples/s × GEMM FLOP per sample, a lower estimate of its GEMMs' "
             f"rate), above the {ceil[t][0]:.1f} used here, so that ceiling read low and a **no** at that thread "
             f"count is not proven ({'that row is flagged ⚠ below' if listed else 'it has no bound in the table'}"
             ").\n" for t, (rate, w, listed) in sorted(low.items())],
           "| target | workload | threads | GEMM FLOP per sample | input bytes per sample | best samples/s "
           "(FMA / memory est.) | cpu-omp share of it | torch-cpu samples/s | best ratio | target | reachable |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for prefix, label, need in TARGETS:
        for w, t in cpu_omp_rows(g, prefix):
            peer = g.get((w, "torch-cpu", t))
            if not peer or w not in layers_of:
                continue  # the first table says so
            head = f"| {label} | {w} | {t} |"
            if t not in ceil:
                have = " and ".join(str(k) for k in sorted(ceil))
                out.append(f"{head} no ceiling measured for {t} threads (env.json has {have}) | | | | | | | |")
                continue
            fma, triad = ceil[t]
            flops = step_flops_per_sample(layers_of[w])
            in_bytes = 4 * layers_of[w][0]
            if not all(math.isfinite(v) and v > 0 for v in (fma, triad, flops, in_bytes)):
                out.append(f"{head} no bound: a ceiling or the FLOP count is not a positive number | | | | | | | |")
                continue
            by_fma, by_mem = fma * 1e9 / flops, triad * READ_OVER_TRIAD * 1e9 / in_bytes
            best = min(by_fma, by_mem)
            p_med = statistics.median(peer)
            ratio = best / p_med
            share = statistics.median(g[(w, "cpu-omp", t)]) / best
            flag = " ⚠ above the bound" if share > 1 else ""
            d = 0
            while d < 6 and share > 1 and round(share * 100, d) <= 100:
                d += 1  # 100.4% must not read "100% ⚠ above the bound"
            reach = ("yes" if ratio >= need else "**no** (memory estimate)" if by_fma > by_mem
                     else "**no** (ceiling read low: not proven)" if t in low
                     else "**no** (raised ceiling: not proven)" if t in raised else "**no**")
            shown = f"{ratio:.{decimals(ratio, (need,), 1, 2)}f}×"  # never rounded across the target
            out.append(f"{head} {flops:,} | {in_bytes:,} | {fmt(by_fma)} / {fmt(by_mem)} | {share:.{d}%}{flag} | "
                       f"{fmt(p_med)} | {shown} | ≥ {need:g}× | {reach} |")
    return out


def others_cpu_share(path):
    """Share of all CPUs' time other processes used while `make perf` ran, from the
    /proc/stat lines before/after, the wall time and the run's own CPU time (the
    last two lines: bash `times`, the shell's and its children's user and system).
    None when the file is absent or unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
        kv = dict(line.split(" ", 1) for line in lines[:-2])
        kv["own_cpu"] = lines[-2] + " " + lines[-1]

        def busy(stat):  # "cpu user nice system idle iowait irq softirq steal ..." in USER_HZ ticks
            v = [int(x) for x in stat.split()[1:]]
            return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")

        def seconds(text):  # "5m10.382s"
            m, s = text.rstrip("s").split("m")
            return 60 * float(m) + float(s)

        own = sum(seconds(t) for t in kv["own_cpu"].split())
        others = busy(kv["after"]) - busy(kv["before"]) - own
        return max(0.0, others) / (float(kv["wall_s"]) * int(kv["cpus"]))
    except (OSError, KeyError, ValueError, IndexError, ZeroDivisionError):
        return None


def natural_key(workload):
    """Sorts linear-1024x8-... before linear-1024x16-...: numbers compare as numbers."""
    import re  # noqa: PLC0415
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", workload)]


def gemm_record(folder):
    """env.json's cpu_gemm in one line (kernel, tile, blocking, why), or None."""
    try:
        with open(os.path.join(folder, "env.json"), encoding="utf-8") as f:
            g = json.load(f).get("cpu_gemm")
        line = (f"kernel {g['kernel']} ({g['micro_tile']} tile, {g['vector_unit']}), kc {g['kc']}, nc {g['nc']}; "
                f"chosen by {g['chosen_by']}")
        step = g.get("linear_step")  # absent before 2026-11-24's fifth session
        return line + (f". Linear models: {step}" if isinstance(step, str) and step else "")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def gemm_vs_blas(folder):
    """The line for gemm-vs-blas.json (bench/micro/gemm_vs_blas.cpp: cpu-omp's GEMM and
    the BLAS's at the large MLP's shapes, alternating in one process), or None."""
    try:
        with open(os.path.join(folder, "gemm-vs-blas.json"), encoding="utf-8") as f:
            j = json.load(f)
        share = float(j["step_ours_over_blas"])
        per = [float(g["ours_over_blas"]) for g in j["gemms"]]
        ours, blas = float(j["step_ours_gflop_per_s"]), float(j["step_blas_gflop_per_s"])
        lib, core, threads, reps = j["blas_library"], j["openblas_core"] or "n/a", j["threads"], j["reps"]
        checked = bool(j["results_checked"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (f"\nLarge MLP GEMMs alone, cpu-omp's against {os.path.basename(lib)} (core {core}), alternating in one "
            f"process (tb_gemm_vs_blas, {threads} threads, median of {reps}): {ours:.1f} ÷ {blas:.1f} GFLOP/s = "
            f"{share_text(share)} [per GEMM {min(per):.0%}–{max(per):.0%}] {share_target(share)}."
            + ("" if checked else " WARNING: a result failed its check (see the tool's output)."))


def rounds_text(ratios, summary, cell=True):
    """How many rounds a paired median is over, and of how many run (paired_ratio.py
    repeats and leaves out disturbed rounds): a table cell, or (cell=False) words for a
    sentence; older paired.json files without rounds_run give the count alone."""
    run = summary.get("rounds_run")
    of = f" of {run}" if isinstance(run, int) and not isinstance(run, bool) and run > len(ratios) else ""
    if summary.get("disturbed") is True:
        return (f"{len(ratios)}{of} (every round that ran: too few undisturbed)" if cell else
                f"{len(ratios)}{of} paired rounds (every round that ran: too few were undisturbed)")
    return f"{len(ratios)}{of}" if cell else f"{len(ratios)}{of} paired rounds"


Pair = collections.namedtuple("Pair", "workload threads ratios median failures rounds disturbed")


def load_paired(folder):
    """paired.json (bench/peers/paired_ratio.py) as a dict, None without a readable one."""
    try:
        with open(os.path.join(folder, "paired.json"), encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def read_pairs(doc):
    """paired.json's pairs as Pairs (median None where no round ran both; rounds: the
    rounds cell; disturbed: the median had to count disturbed rounds), None for an
    unreadable entry; None without pairs."""
    pairs = (doc or {}).get("pairs")
    if pairs is None:
        return None
    out = []
    for p in pairs if isinstance(pairs, list) else []:
        try:
            ratios = [float(r) for r in p.get("ratios") or []]
            med = None if p.get("median_ratio") is None else float(p["median_ratio"])
            if med is not None and not ratios:
                raise ValueError("a median without rounds")
            if not all(math.isfinite(r) and r > 0 for r in ratios + ([] if med is None else [med])):
                raise ValueError("a ratio that is not a positive number")
            out.append(Pair(str(p["workload"]), int(p["threads"]), ratios, med,
                            [str(f) for f in p.get("failures") or []], rounds_text(ratios, p),
                            p.get("disturbed") is True))
        except (KeyError, TypeError, ValueError, OverflowError, AttributeError):
            out.append(None)
    return out


def disturbance_rule(doc):
    """The sentence saying which paired rounds were left out, "" for a paired.json
    written before paired_ratio.py judged rounds."""
    limit = doc.get("max_disturbance")
    if not isinstance(limit, (int, float)) or isinstance(limit, bool) or not 0 <= limit <= 1:
        return ""
    return (f" A round in which other processes or the hypervisor took more than {limit * 100:g}% of the machine's "
            "CPU time during one of its runs is repeated (up to twice the rounds in all) and left out of the "
            "medians that use that run; `rounds` says how many counted of how many ran (paired.json keeps them "
            "all), and a median that had to count disturbed rounds says so.")


def paired_table(doc):
    """Markdown lines for paired.json's pairs (cpu-omp and torch-cpu repetitions
    alternating in rounds, a ratio per round), or [] without them."""
    pairs = read_pairs(doc)
    if pairs is None:
        return []
    out = ["\nPaired rounds (paired.json; each round one cpu-omp and one torch-cpu repetition back to back, "
           "order flipped every round; ratio per round). Where a target is in both tables, quote this one: the "
           "table above divides medians of blocks run minutes apart." + disturbance_rule(doc) + "\n",
           f"A verdict is decided where the {COVERAGE:.0%} confidence interval of the median lies wholly on one "
           "side of the target.\n",
           "| target | workload | threads | rounds | cpu-omp ÷ torch-cpu per round, median [min–max] | target | "
           f"margin | met | decided ({COVERAGE:.0%} interval of the median) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for pair in pairs:
        if pair is None:
            out.append("| – | unreadable entry in paired.json | | | | | | – | – |")
            continue
        workload, threads, ratios, med, failures, rounds, _ = pair
        target = next(((label, need) for prefix, label, need in TARGETS if workload.startswith(prefix)), None)
        label, need = target if target else ("–", None)
        failed = f" ({len(failures)} failed: {failures[0]})" if failures else ""
        if med is None:
            out.append(f"| {label} | {workload} | {threads} | 0 | no round ran both{failed} | "
                       f"{'–' if need is None else f'≥ {need:g}×'} | | – | – |")
            continue
        cell = f"{ratio_text(med, need) if need else f'{med:.2f}×'} {span_text(ratios, need)}{failed}"
        if need is None:
            out.append(f"| {label} | {workload} | {threads} | {rounds} | {cell} | – | | – | – |")
            continue
        met, margin = verdict(med, need)
        out.append(f"| {label} | {workload} | {threads} | {rounds} | {cell} | ≥ {need:g}× | "
                   f"{margin_text(margin)} | {met} | {decided_cell(ratios, need)} |")
    return out


def paired_scaling(doc):
    """{(workload, threads): (per-round ratios, rounds in words, whether disturbed rounds
    had to count)} of paired.json's "scaling"
    entries (cpu-omp at `threads` ÷ at 1 thread, both in each round); an unreadable entry
    is left out, and the suite's medians judge its workload. {} without any."""
    entries = (doc or {}).get("scaling") or []
    out = {}
    for e in entries if isinstance(entries, list) else []:
        try:
            ratios = [float(r) for r in e["ratios"]]
            if ratios and all(math.isfinite(r) and r > 0 for r in ratios) and int(e["threads"][0]) == 1:
                out[(str(e["workload"]), int(e["threads"][1]))] = (ratios, rounds_text(ratios, e, cell=False),
                                                                  e.get("disturbed") is True)
        except (KeyError, TypeError, ValueError, IndexError, OverflowError, AttributeError):
            continue
    return out


def paired_medians(doc):
    """{(workload, threads): (median per-round ratio, whether it counted disturbed
    rounds, the per-round ratios)} of paired.json's readable pairs."""
    return {(p.workload, p.threads): (p.median, p.disturbed, p.ratios) for p in read_pairs(doc) or []
            if p is not None and p.median is not None}


def verdict_lines(checked, paired):
    """One paragraph: how many ratio targets are met, each taking the paired rounds'
    median where the folder has one (drift cancelled) and the ratio of medians
    otherwise; then the ones not met. checked: [(label, workload, threads, ratio, need)]."""
    met, missed, noisy, straddle, few, by_rounds = 0, [], 0, [], [], 0
    for label, w, t, ratio, need in checked:
        r, disturbed, ratios = paired.get((w, t), (ratio, False, None))
        noisy += disturbed
        src = ("paired, disturbed rounds counted" if disturbed else "paired") if (w, t) in paired else "medians"
        name = f"{w} at {t} thread{'s' if t != 1 else ''}"
        if verdict(r, need)[0] == "**no**":
            missed.append(f"{name} ({ratio_text(r, need)}, {src})")
        else:
            met += 1
        if ratios is not None:
            by_rounds += 1
            sure, why = decided(ratios, need)
            if not sure:
                (few if len(ratios) < rounds_for() else straddle).append(
                    f"{name} ({'met' if r >= need else 'not met'}; {why})")
    if not checked:
        return []
    text = (f"\nVerdict: {met} of {len(checked)} ratio targets met (the paired rounds' median where they ran, "
            "else the ratio of medians).")
    if missed:
        text += " Not met: " + "; ".join(missed) + "."
    if noisy:
        text += (f" {noisy} of the {len(checked)} verdicts (met or not) come from paired rounds that were all "
                 "counted, disturbed ones included (too few ran undisturbed): they say as much about the machine as "
                 "about the code.")
    if by_rounds:
        sure = by_rounds - len(straddle) - len(few)
        text += (f" Of the {by_rounds} verdict{'s' if by_rounds != 1 else ''} from paired rounds, {sure} "
                 f"{'is' if sure == 1 else 'are'} decided "
                 f"at {COVERAGE:.0%} confidence.")
        if straddle:
            text += (" Undecided, as the rounds' spread on this machine could put them either side of the target: "
                     + "; ".join(straddle) + ".")
        if few:
            text += " Undecided, too few rounds counted: " + "; ".join(few) + "."
    return [text]


def groups(rows):
    """{(workload, backend, threads): [samples/s]} over the ok rows, and how many ok rows
    were left out for a rate or thread count that is not a positive number."""
    g, bad = {}, 0
    for r in rows:
        if r.get("status") != "ok":
            continue
        try:
            t, sps = int(r["threads"]), float(r["samples_per_s"])
        except (KeyError, TypeError, ValueError, OverflowError):
            bad += 1
            continue
        if t < 1 or not (math.isfinite(sps) and sps > 0):
            bad += 1
            continue
        g.setdefault((r["workload"], r["backend"], t), []).append(sps)
    return g, bad


def cpu_omp_rows(g, prefix):
    """(workload, threads) of every cpu-omp group whose workload starts with prefix, in
    table order: workloads by their numbers, then threads."""
    for w in sorted({w for (w, b, t) in g if w.startswith(prefix)}, key=natural_key):
        for t in sorted({t for (ww, b, t) in g if ww == w and b == "cpu-omp"}):
            yield w, t


def fmt(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def main(argv):
    if len(argv) != 2:
        print("usage: perf_summary.py RESULTS_DIR", file=sys.stderr)
        return 2
    folder = argv[1]
    try:
        with open(os.path.join(folder, "results.csv"), encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"perf_summary.py: {folder}/results.csv: {e.strerror}", file=sys.stderr)
        return 2
    # sgemm measured before and after the suite: the faster one is the machine's
    # rate (a busy moment only ever slows a measurement down).
    sgemm, unreadable = None, []
    for name in sorted(os.listdir(folder)):
        if name.startswith("sgemm") and name.endswith(".json"):
            m = read_sgemm(os.path.join(folder, name))
            if m is None:
                unreadable.append(name)  # e.g. cut short by a full disk: said below, not fatal
                continue
            m["file"] = name
            if sgemm is None or m["step_gflop_per_s"] > sgemm["step_gflop_per_s"]:
                sgemm = m
    g, bad_rows = groups(rows)
    layers_of = {}
    for r in rows:
        try:
            layers_of[r["workload"]] = [int(v) for v in r["layers"].split(",")]
        except (KeyError, AttributeError, ValueError):
            pass  # no bound for that workload: its rows say so
    out = ["| target | workload | threads | cpu-omp samples/s median [min–max] | "
           "torch-cpu samples/s median [min–max] | ratio | target | margin | met |",
           "|---|---|---|---|---|---|---|---|---|"]
    checked = []  # (label, workload, threads, ratio, need) of each row with a peer
    for prefix, label, need in TARGETS:
        if not any(w.startswith(prefix) for (w, b, t) in g):
            out.append(f"| {label} | – | – | not run | | | ≥ {need:g}× | | – |")
            continue
        for w, t in cpu_omp_rows(g, prefix):
            ours = g.get((w, "cpu-omp", t), [])
            peer = g.get((w, "torch-cpu", t), [])
            o_med = statistics.median(ours)
            cell_o = f"{fmt(o_med)} [{fmt(min(ours))}–{fmt(max(ours))}]"
            if peer:
                p_med = statistics.median(peer)
                ratio = o_med / p_med
                cell_p = f"{fmt(p_med)} [{fmt(min(peer))}–{fmt(max(peer))}]"
                met, margin = verdict(ratio, need)
                checked.append((label, w, t, ratio, need))
                out.append(f"| {label} | {w} | {t} | {cell_o} | {cell_p} | {ratio_text(ratio, need)} | "
                           f"≥ {need:g}× | {margin_text(margin)} | {met} |")
            else:
                out.append(f"| {label} | {w} | {t} | {cell_o} | no torch-cpu row | – | ≥ {need:g}× | | – |")
    paired = load_paired(folder)
    lines = ["\n".join(out + paired_table(paired) + bound_table(folder, g, layers_of))]
    lines += verdict_lines(checked, paired_medians(paired))
    small = sorted({w for (w, b, t) in g if w.startswith(TARGETS[2][0]) and b == "cpu-omp"})
    scaling = paired_scaling(paired)
    for w in small:
        threads = sorted(t for (ww, b, t) in g if ww == w and b == "cpu-omp")
        if 1 not in threads or 2 not in threads:
            lines.append(f"\nSmall MLP scaling ({w}): needs cpu-omp rows at 1 and 2 threads (have {threads}).")
            continue
        one, two = statistics.median(g[(w, "cpu-omp", 1)]), statistics.median(g[(w, "cpu-omp", 2)])
        rounds, counted, disturbed = scaling.get((w, 2), (None, None, False))
        judged = two / one if rounds is None else statistics.median(rounds)
        met, margin = verdict(judged, SMALL_MLP_SCALING)
        by = "" if rounds is None else ", judged by the paired rounds" + (
            ", disturbed ones counted: not a verdict on the code" if disturbed else "")
        paired_text = "" if rounds is None else (
            f"; {ratio_text(judged, SMALL_MLP_SCALING)} {span_text(rounds, SMALL_MLP_SCALING)} in {counted} "
            "(1 and 2 threads in each round, the ratio per round)")
        if rounds is not None:
            sure, why = decided(rounds, SMALL_MLP_SCALING)
            by += f"; {'decided' if sure else 'undecided'} at {COVERAGE:.0%} confidence: {why}"
        lines.append(f"\nSmall MLP scaling ({w}): cpu-omp 2 threads ÷ 1 thread = {fmt(two)} ÷ {fmt(one)} = "
                     f"{ratio_text(two / one, SMALL_MLP_SCALING)} by the suite's medians{paired_text} "
                     f"(target ≥ {SMALL_MLP_SCALING:g}× on a 2-core machine; margin {margin_text(margin)}: "
                     f"{met.replace('**', '')}{by}).")
    big = [w for (w, b, t) in g if w.startswith(TARGETS[3][0]) and b == "cpu-omp" and w in layers_of]
    if big and sgemm:
        w = big[0]
        t = max(tt for (ww, b, tt) in g if ww == w and b == "cpu-omp")
        sps = g[(w, "cpu-omp", t)]
        flops = step_flops_per_sample(layers_of[w])
        rate = [s * flops / 1e9 for s in sps]
        share = statistics.median(rate) / sgemm["step_gflop_per_s"]
        lines.append(
            f"\nLarge MLP GEMM rate: cpu-omp {statistics.median(rate):.1f} GFLOP/s [{min(rate):.1f}–{max(rate):.1f}] "
            f"({t} threads; {flops / 1e6:.1f} MFLOP per sample) against the sgemm rate "
            f"{sgemm['step_gflop_per_s']:.1f} GFLOP/s ({sgemm['file']}: {sgemm['threads']} threads, "
            f"{sgemm['blas_library']}, core {sgemm['openblas_core']}) = {share_text(share)} {share_target(share)}.")
    elif big:
        lines.append("\nLarge MLP GEMM rate: no readable sgemm*.json in this folder (run bench/peers/sgemm_rate.py).")
    if unreadable:
        lines.append(f"\nUnreadable, left out: {', '.join(unreadable)}.")
    if bad_rows:
        lines.append(f"\nLeft out: {bad_rows} ok row(s) of results.csv whose samples_per_s or threads is not a "
                     "positive number.")
    vs = gemm_vs_blas(folder)
    if vs:
        lines.append(vs)
    gemm = gemm_record(folder)
    if gemm:
        lines.append(f"\ncpu-omp's GEMM: {gemm}.")
    usage = others_cpu_share(os.path.join(folder, "cpu_usage.txt"))
    if usage is not None:
        lines.append(f"\nOther processes used {usage:.1%} of the machine's CPU time during the run "
                     "(/proc/stat busy time minus this run's own CPU time).")
        if usage > OTHERS_MAX:
            lines.append(f"WARNING: above {OTHERS_MAX:.0%}: the machine was shared; rerun on an idle machine "
                         "before comparing these numbers.")
    load = os.path.join(folder, "loadavg.txt")
    if os.path.isfile(load):
        with open(load, encoding="utf-8") as f:
            loads = [l.split()[:3] for l in f if l.strip()]
        lines.append("Load average (1, 5, 15 min) before / after (after includes the run itself): " +
                     " / ".join(" ".join(l) for l in loads))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    try:
        write_text(os.path.join(folder, "perf_summary.md"), text)
    except OSError as e:  # a full disk: the previous perf_summary.md, if any, stays whole
        print(f"perf_summary.py: {folder}/perf_summary.md not written: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
