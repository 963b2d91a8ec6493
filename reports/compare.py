#!/usr/bin/env python3
"""Compare a new trainbench run with a baseline; fail CI only on a real slowdown.

Usage: reports/compare.py BASE_DIR NEW_DIR [--threshold 5%] [--alpha 0.05]
                          [--format text|markdown]

For every configuration (its workload, setup and knob cells: load.CONFIG_COLUMNS,
shown as workload, backend, world size, devices, threads and the settings that
tell look-alikes apart) in both runs it prints the median samples/s of each, the change, the one-sided
Mann-Whitney U p-value of "new is slower" and whether the min–max ranges of the
repetitions overlap.

The gate (why both conditions: a CI runner is noisy, and a tiny but consistent
change is not worth a red build):
  REGRESSION  when  slowdown = 1 − median_new / median_base  >  threshold
              AND the slowdown is beyond noise, i.e.
                  Mann-Whitney U one-sided p <= alpha   (needs >= 3 reps per side
                                                         to reach 0.05: 1/C(6,3))
               OR the ranges do not overlap: max(new) < min(base)
                  (decides for 1–2 repetitions; with 1 repetition each there is
                   no noise estimate and the threshold alone decides).
Exit status: 1 when any configuration is a REGRESSION; 0 otherwise (also when
configurations are missing, failed or skipped in the new run: these are listed
and warned about on stderr); 2 on bad input (one line on stderr).
Environment differences (GPU, driver, build type/flags/compiler, CUDA/NCCL/MPI,
CPU, commit) are warned about on stderr and listed under the table: they may
explain a change.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import derive  # noqa: E402
import fmt  # noqa: E402
import stats  # noqa: E402
from load import CONFIG_COLUMNS, InputError, load_run  # noqa: E402

DEFAULT_THRESHOLD = "5%"
DEFAULT_ALPHA = 0.05


def parse_threshold(text):
    """'5%' or '5' -> 0.05 (always percent)."""
    t = text.strip().rstrip("%").strip()
    try:
        v = float(t) / 100.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"threshold '{text}' is not a percentage like 5%") from None
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"threshold '{text}' must be in [0%, 100%)")
    return v


def _groups_by_key(run):
    out = {}
    for g in derive.group_rows(run.rows).values():
        if g.key in out:
            raise InputError(f"{run.path}: more than one run_id holds {_name(g.key)}; "
                             "compare takes one run per folder")
        out[g.key] = g
    return out


def _not_ok_by_key(run):
    out = {}
    for r in run.rows:
        if r["state"] != "ok":
            out[derive.config_key(r)] = r
    return out


def _name(key):
    """workload/backend/world size/devices/threads of a configuration key, for messages."""
    c = dict(zip(CONFIG_COLUMNS, key))
    return "/".join(str(c[k]) for k in derive.SHOWN_COLUMNS)


def _gpu_names(env):
    gpus = env.get("gpus")
    if not isinstance(gpus, list):
        return None
    return ", ".join(str(g.get("name", "?")) if isinstance(g, dict) else str(g) for g in gpus) or "none"


def _get(env, *keys):
    v = env
    for k in keys:
        if not isinstance(v, dict):
            return None
        v = v.get(k)
    return v


ENV_FIELDS = [
    ("GPUs", _gpu_names),
    ("driver", lambda e: e.get("driver")),
    ("build type", lambda e: _get(e, "build", "type")),
    ("compiler", lambda e: _get(e, "build", "compiler")),
    ("build flags", lambda e: _get(e, "build", "flags")),
    ("CUDA", lambda e: _get(e, "build", "cuda") or _get(e, "build", "cuda_runtime")),
    ("NCCL", lambda e: _get(e, "build", "nccl")),
    ("MPI", lambda e: _get(e, "build", "mpi")),
    ("CPU", lambda e: _get(e, "host", "cpu_model")),
    ("commit", lambda e: (str(_get(e, "git", "commit")) + (" (dirty)" if _get(e, "git", "dirty") else ""))
     if _get(e, "git", "commit") else None),
]


def env_differences(base_env, new_env):
    """[(field, base value, new value)] for the fields that may explain a change."""
    diffs = []
    for name, get in ENV_FIELDS:
        a, b = get(base_env), get(new_env)
        if a != b:
            diffs.append((name, "–" if a is None else str(a), "–" if b is None else str(b)))
    return diffs


def judge(base_sps, new_sps, threshold, alpha):
    """Verdict for one configuration; returns a dict with the figures and the verdict."""
    mb, mn = stats.median(base_sps), stats.median(new_sps)
    change = mn / mb - 1.0
    _, p, _ = stats.mann_whitney_less(new_sps, base_sps)
    overlap = stats.ranges_overlap(base_sps, new_sps)
    slower_beyond_noise = p <= alpha or max(new_sps) < min(base_sps)
    faster_beyond_noise = max(base_sps) < min(new_sps) or \
        stats.mann_whitney_less(base_sps, new_sps)[1] <= alpha
    if -change > threshold and slower_beyond_noise:
        verdict = "REGRESSION"
    elif -change > threshold:
        verdict = "slower, within noise"
    elif change > threshold and faster_beyond_noise:
        verdict = "faster"
    elif change > threshold:
        verdict = "faster, within noise"
    else:
        verdict = "ok"
    return dict(base=mb, new=mn, change=change, p=p, overlap=overlap, verdict=verdict,
                cv_base=stats.cv(base_sps), cv_new=stats.cv(new_sps),
                n_base=len(base_sps), n_new=len(new_sps))


def compare(base, new, threshold, alpha):
    """Rows for the table and warning lines; no printing."""
    bg, ng = _groups_by_key(base), _groups_by_key(new)
    b_bad, n_bad = _not_ok_by_key(base), _not_ok_by_key(new)
    rows, warnings = [], []
    keys = list(bg) + [k for k in ng if k not in bg]
    settings = derive.distinguishing([dict(zip(CONFIG_COLUMNS, k)) for k in keys])
    for k, setting in zip(keys, settings):
        row = dict(key=k, settings=setting)
        if k in bg and k in ng:
            row.update(judge(bg[k].sps, ng[k].sps, threshold, alpha))
            # Asynchronous rows (Hogwild!) differ run to run: their own, wider bound.
            rel, state = derive.loss_check(ng[k].final_loss, bg[k].final_loss, ng[k].loss_rtol)
            if state == "mismatch":
                row["verdict"] += f"; final loss changed ({fmt.rel_err(rel)})"
                warnings.append(f"{_name(k)}: final loss changed from "
                                f"{fmt.loss(bg[k].final_loss)} to {fmt.loss(ng[k].final_loss)}")
            if min(row["n_base"], row["n_new"]) < 3:
                warnings.append(f"{_name(k)}: fewer than 3 repetitions, "
                                "noise judged by range overlap only")
        elif k in bg:
            g = bg[k]
            row.update(base=g.med_sps, n_base=len(g.sps))
            if k in n_bad:
                row["verdict"] = f"{n_bad[k]['state'].upper()} in new: {n_bad[k]['reason']}"
            else:
                row["verdict"] = "missing in new"
            warnings.append(f"{_name(k)}: ran in base, {row['verdict']}")
        else:
            g = ng[k]
            row.update(new=g.med_sps, n_new=len(g.sps))
            row["verdict"] = (f"new ({b_bad[k]['state']} in base)" if k in b_bad else "new")
        rows.append(row)
    return rows, warnings


COLUMNS = ["workload", "backend", "world size", "devices", "threads", "settings", "base samples/s",
           "new samples/s", "change", "CV base/new", "p (new slower)", "ranges", "verdict"]


def _cells(row):
    c = dict(zip(CONFIG_COLUMNS, row["key"]))
    n = lambda m: f" (n={row[m]})" if m in row else ""  # noqa: E731
    cv = "–"
    if "cv_base" in row:
        cv = f"{fmt.percent(row['cv_base'])}/{fmt.percent(row['cv_new'])}"
    return [c["workload"], c["backend"], str(c["world_size"]), c["devices"], str(c["threads"]),
            row["settings"] or "–",
            fmt.sps(row.get("base")) + n("n_base"), fmt.sps(row.get("new")) + n("n_new"),
            fmt.signed_percent(row.get("change")), cv, fmt.pvalue(row.get("p")),
            "–" if "overlap" not in row else ("overlap" if row["overlap"] else "disjoint"),
            row["verdict"]]


def format_table(rows, style="text"):
    cells = [_cells(r) for r in rows]
    if style == "markdown":
        lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        for c in cells:
            verdict = c[-1]
            if verdict.startswith("REGRESSION") or verdict.startswith("FAILED"):
                c = c[:-1] + [f"**{verdict}**"]
            lines.append("| " + " | ".join(x.replace("|", "\\|") for x in c) + " |")
        return "\n".join(lines)
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h)
              for i, h in enumerate(COLUMNS)]
    out = ["  ".join(h.ljust(w) for h, w in zip(COLUMNS, widths)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    for c in cells:
        out.append("  ".join(x.ljust(w) for x, w in zip(c, widths)).rstrip())
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base_dir", metavar="BASE_DIR")
    ap.add_argument("new_dir", metavar="NEW_DIR")
    ap.add_argument("--threshold", type=parse_threshold, default=parse_threshold(DEFAULT_THRESHOLD),
                    help="slowdown of the median samples/s that fails, e.g. 5%% (default 5%%)")
    ap.add_argument("--alpha", type=float, default=DEFAULT_ALPHA,
                    help="significance level of the Mann-Whitney U test (default 0.05)")
    ap.add_argument("--format", choices=["text", "markdown"], default="text")
    args = ap.parse_args(argv)
    try:
        base, new = load_run(args.base_dir), load_run(args.new_dir)
    except InputError as e:
        print(f"compare.py: error: {e}", file=sys.stderr)
        return 2
    rows, warnings = compare(base, new, args.threshold, args.alpha)
    diffs = env_differences(base.env, new.env)
    md = args.format == "markdown"
    print(("### " if md else "") + f"trainbench compare: {base.run_id} (base) -> {new.run_id} (new), "
          f"threshold {fmt.percent(args.threshold)}, alpha {args.alpha:g}")
    print()
    print(format_table(rows, args.format))
    if diffs:
        print()
        print("Environment differences (may explain changes):")
        for name, a, b in diffs:
            print(f"{'- ' if md else '  '}{name}: {a} -> {b}")
            print(f"compare.py: warning: environments differ: {name}: {a} -> {b}", file=sys.stderr)
    for w in warnings:
        print(f"compare.py: warning: {w}", file=sys.stderr)
    regressions = [r for r in rows if r["verdict"].startswith("REGRESSION")]
    print()
    if regressions:
        print(f"{len(regressions)} regression(s) beyond {fmt.percent(args.threshold)} and beyond noise.")
        return 1
    print("No regression beyond the threshold and the noise.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
