#!/usr/bin/env python3
"""Compare a new trainbench run with a baseline; fail on a slowdown or a run that proves nothing.

Usage: reports/compare.py BASE_DIR NEW_DIR [--threshold 5%] [--alpha 0.05]
                          [--format text|markdown] [--allow-missing] [--allow-mixed-runs]

For every configuration (its workload, setup and knob cells: load.CONFIG_COLUMNS,
shown as workload, backend, world size, devices, threads and the settings that
tell look-alikes apart) in both runs it prints the median samples/s of each, the change, the one-sided
Mann-Whitney U p-value of "new is slower" and whether the min–max ranges of the
repetitions overlap.

The gate (why both conditions: a CI runner is noisy, and a tiny but consistent
change is not worth a red build):
  REGRESSION  when  slowdown = 1 − median_new / median_base  >  threshold
              AND a slowdown beyond the margin is beyond noise, i.e. against the
              baseline scaled by (1 − margin), margin = max(threshold, CV of either run):
                  Mann-Whitney U one-sided p <= alpha   (needs >= 3 reps per side
                                                         to reach 0.05: 1/C(6,3))
               OR the ranges do not overlap: max(new) < (1 − margin) × min(base)
                  (decides for 1–2 repetitions; with 1 repetition each there is
                   no noise estimate and the threshold alone decides).
Under "no change" (an A/A comparison) a configuration is called a regression only
when its noise looks like a slowdown of more than the threshold at level alpha, far
rarer than alpha; tests/reports/test_gate_aa.py measures the whole-run false-alarm
rate on realistic noise (docs/decisions.md: why the shifted test).

A gate that compared nothing must not pass, so besides a regression it fails when
a configuration FAILED in the new run, when a configuration measured in the base
was not measured in the new run (missing or skipped; --allow-missing accepts
that), when nothing can be compared, when BASE and NEW are one run, and when a
folder mixes several runs (--allow-mixed-runs accepts that). Each has its own exit
status (EXIT_CODES, below and in --help) and one line on stderr.
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
from load import CONFIG_COLUMNS, InputError, load_run, printable  # noqa: E402

DEFAULT_THRESHOLD = "5%"
DEFAULT_ALPHA = 0.05

# Exit statuses: stable, documented here, in --help and in the README ("Comparing two
# runs"). When several apply the first in PRECEDENCE is returned; every one that
# applies is printed.
EXIT_OK = 0          # every configuration of BASE measured in NEW, none slower beyond both
EXIT_REGRESSION = 1  # a configuration slower beyond the threshold and beyond noise
EXIT_BAD_INPUT = 2   # unreadable or invalid folder or file, bad option (argparse's status too)
EXIT_FAILED = 3      # a configuration FAILED in NEW (a failed: row)
EXIT_MISSING = 4     # a configuration of BASE missing or skipped in NEW (--allow-missing)
EXIT_NOTHING = 5     # no measured row in BASE or NEW, or no configuration in common
EXIT_SAME_RUN = 6    # BASE and NEW are the same folder, or hold the same run
EXIT_MIXED_RUNS = 7  # BASE or NEW holds rows of several runs (--allow-mixed-runs)
PRECEDENCE = [EXIT_BAD_INPUT, EXIT_SAME_RUN, EXIT_MIXED_RUNS, EXIT_FAILED, EXIT_NOTHING,
              EXIT_MISSING, EXIT_REGRESSION]
EXIT_CODES = """\
exit status:
  0  no regression: every configuration of BASE compared, none failed, none slower
     beyond the threshold and the noise
  1  regression: a configuration slower than the threshold and beyond noise
  2  bad input: a folder or file that cannot be read or is invalid, a bad option
  3  a configuration FAILED in NEW
  4  a configuration measured in BASE is missing or skipped in NEW
     (--allow-missing makes it a warning)
  5  nothing to compare: BASE or NEW has no measured (ok) row, or the two runs
     share no configuration
  6  BASE and NEW are the same folder or hold the same run
  7  BASE or NEW mixes several runs: rows of more than one run_id, or an env.json
     of another run (--allow-mixed-runs compares it anyway)
When several apply, the first of 2, 6, 7, 3, 5, 4, 1 is returned; all are printed."""


class Refused(Exception):
    """compare cannot judge these folders; .code is the exit status, str() the one line."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


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


def parse_alpha(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"alpha '{text}' is not a number like 0.05") from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"alpha '{text}' must be in (0, 1)")
    return v


def _groups_by_key(run):
    out = {}
    for g in derive.group_rows(run.rows).values():
        if g.key in out:
            raise Refused(EXIT_MIXED_RUNS,
                          f"{run.path}: runs {out[g.key].run_id} and {g.run_id} both measured "
                          f"{_name(g.key)}; even with --allow-mixed-runs a configuration must "
                          "come from one run")
        out[g.key] = g
    return out


def _not_ok_by_key(run, state=None):
    """{configuration key: its first skipped or failed row} (only `state` rows when given)."""
    out = {}
    for r in run.rows:
        if r["state"] != "ok" and (state is None or r["state"] == state):
            out.setdefault(derive.config_key(r), r)
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
    # The toolkit it was built with and the runtime it found (harness/env_capture.cpp);
    # env.json before those keys had build.cuda, the runtime.
    ("CUDA toolkit", lambda e: _get(e, "build", "cuda_toolkit")),
    ("CUDA runtime", lambda e: _get(e, "build", "cuda_runtime") or _get(e, "build", "cuda")),
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
    # The noise test asks whether NEW is slower than BASE by more than the threshold
    # (BASE scaled by 1 − threshold), not merely slower: under no change (A/A) a run of
    # many configurations is then rarely failed even on a noisy runner (tests/reports/
    # test_gate_aa.py), at the price of power just past the threshold.
    # The margin is the threshold, or the repetitions' own spread (the larger coefficient
    # of variation of the two runs) where that is wider: a change smaller than the noise
    # cannot be told from it with 3-5 repetitions.
    margin = max(threshold, stats.cv(base_sps) or 0.0, stats.cv(new_sps) or 0.0)
    shifted_down = [b * (1.0 - margin) for b in base_sps]
    shifted_up = [b * (1.0 + margin) for b in base_sps]
    _, p, _ = stats.mann_whitney_less(new_sps, shifted_down)
    overlap = stats.ranges_overlap(base_sps, new_sps)
    slower_beyond_noise = p <= alpha or max(new_sps) < min(shifted_down)
    faster_beyond_noise = max(shifted_up) < min(new_sps) or \
        stats.mann_whitney_less(shifted_up, new_sps)[1] <= alpha
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
    """Rows for the table and warning lines; no printing.

    Each row has `status`: "compared" (in both runs), "failed" (a failed row in NEW
    and no measurement there), "missing" (measured in BASE only: absent or skipped in
    NEW) or "new" (measured in NEW only); `failed_in_new` holds NEW's failed row of
    the configuration, if any (also for a compared one that lost a repetition)."""
    bg, ng = _groups_by_key(base), _groups_by_key(new)
    b_bad, n_bad = _not_ok_by_key(base), _not_ok_by_key(new)
    n_failed = _not_ok_by_key(new, "failed")
    rows, warnings = [], []
    keys = list(bg) + [k for k in ng if k not in bg]
    keys += [k for k in n_failed if k not in bg and k not in ng]
    settings = derive.distinguishing([dict(zip(CONFIG_COLUMNS, k)) for k in keys])
    for k, setting in zip(keys, settings):
        row = dict(key=k, settings=setting, failed_in_new=n_failed.get(k))
        if k in bg and k in ng:
            row["status"] = "compared"
            row.update(judge(bg[k].sps, ng[k].sps, threshold, alpha))
            # Asynchronous rows (Hogwild!) differ run to run: their own, wider bound.
            rel, state = derive.loss_check(ng[k].final_loss, bg[k].final_loss, ng[k].loss_rtol)
            if state == "mismatch":
                row["verdict"] += f"; final loss changed ({fmt.rel_err(rel)})"
                warnings.append(f"{_name(k)}: final loss changed from "
                                f"{fmt.loss(bg[k].final_loss)} to {fmt.loss(ng[k].final_loss)}")
            if k in n_failed:
                row["verdict"] += f"; a repetition FAILED in new: {n_failed[k]['reason']}"
            if min(row["n_base"], row["n_new"]) < 3:
                warnings.append(f"{_name(k)}: fewer than 3 repetitions, "
                                "noise judged by range overlap only")
        elif k in bg:
            g = bg[k]
            row.update(base=g.med_sps, n_base=len(g.sps))
            if k in n_bad:
                row["status"] = "failed" if n_bad[k]["state"] == "failed" else "missing"
                row["verdict"] = f"{n_bad[k]['state'].upper()} in new: {n_bad[k]['reason']}"
            else:
                row["status"], row["verdict"] = "missing", "missing in new"
            warnings.append(f"{_name(k)}: ran in base, {row['verdict']}")
        elif k in ng:
            g = ng[k]
            row.update(new=g.med_sps, n_new=len(g.sps), status="new")
            row["verdict"] = (f"new ({b_bad[k]['state']} in base)" if k in b_bad else "new")
        else:
            row["status"] = "failed"
            row["verdict"] = f"FAILED in new: {n_failed[k]['reason']}" + (
                f" ({b_bad[k]['state']} in base)" if k in b_bad else " (not in base)")
        rows.append(row)
    return rows, warnings


def _names(keys, most=4):
    names = [_name(k) for k in keys]
    more = len(names) - most
    return ", ".join(names[:most]) + (f" and {more} more" if more > 0 else "")


def _not_measured(run):
    """'all 5 row(s) skipped (no CUDA device)' for a folder without an ok row."""
    reasons = []
    for r in run.rows:
        if r["reason"] not in reasons:
            reasons.append(r["reason"])
    text = f"all {len(run.rows)} row(s) " + " or ".join(sorted({r["state"] for r in run.rows}))
    if reasons:
        more = f"; {len(reasons) - 1} other reason(s)" if len(reasons) > 1 else ""
        text += f" ({reasons[0]}{more})"
    return text


def gate(base, new, rows, allow_missing=False):
    """[(exit status, one-line message)] of every reason the gate fails, in PRECEDENCE
    order; empty when it passes."""
    problems = []
    failed = [r for r in rows if r["failed_in_new"] is not None]
    if failed:
        first = failed[0]["failed_in_new"]
        problems.append((EXIT_FAILED, f"{len(failed)} configuration(s) FAILED in NEW: "
                         f"{_names([r['key'] for r in failed])} (first: {first['reason']})"))
    compared = [r for r in rows if r["status"] == "compared"]
    if not compared:
        if not any(r["state"] == "ok" for r in new.rows):
            why = f"NEW ({new.path}) has no measured configuration: {_not_measured(new)}"
        elif not any(r["state"] == "ok" for r in base.rows):
            why = f"BASE ({base.path}) has no measured configuration: {_not_measured(base)}"
        else:
            why = (f"BASE ({base.path}) and NEW ({new.path}) share no configuration "
                   "(workload, backend, world size, devices, threads and knobs must all match)")
        problems.append((EXIT_NOTHING, f"nothing to compare: {why}"))
    else:
        missing = [r for r in rows if r["status"] == "missing"]
        if missing and not allow_missing:
            problems.append((EXIT_MISSING, f"{len(missing)} configuration(s) measured in BASE "
                             f"were not measured in NEW (missing or skipped): "
                             f"{_names([r['key'] for r in missing])}; "
                             "--allow-missing accepts that"))
    regressions = [r for r in rows if r.get("verdict", "").startswith("REGRESSION")]
    if regressions:
        problems.append((EXIT_REGRESSION, f"{len(regressions)} regression(s) beyond the threshold "
                         f"and beyond noise: {_names([r['key'] for r in regressions])}"))
    return sorted(problems, key=lambda p: PRECEDENCE.index(p[0]))


def check_runs(base, new, allow_mixed_runs=False):
    """Refused when BASE and NEW are one run, or one mixes runs (unless allowed); else
    the warning lines for mixed folders that were allowed."""
    if os.path.realpath(base.path) == os.path.realpath(new.path):
        raise Refused(EXIT_SAME_RUN, f"BASE and NEW are the same folder ({new.path}): a run "
                      "compared with itself proves nothing; give NEW another run's folder")
    shared = [rid for rid in base.run_ids if rid in new.run_ids]
    if shared:
        raise Refused(EXIT_SAME_RUN, f"BASE ({base.path}) and NEW ({new.path}) hold the same run "
                      f"{', '.join(shared)} (a copy?): a run compared with itself proves nothing")
    warnings = []
    for which, run in (("BASE", base), ("NEW", new)):
        mixed = run.mixed_runs()
        if mixed and not allow_mixed_runs:
            raise Refused(EXIT_MIXED_RUNS, f"{which} {mixed}; compare takes one run per folder "
                          "(--allow-mixed-runs compares it anyway)")
        if mixed:
            warnings.append(f"{which} {mixed}; compared anyway (--allow-mixed-runs), its env.json "
                            f"describes run {run.env.get('run_id')} only")
    return warnings


# Characters GitHub-flavoured markdown acts on inside a table cell: code spans, emphasis,
# links, HTML tags, entities, strikethrough, math and the cell separator; each is
# backslash-escaped (CommonMark: a backslash before ASCII punctuation is that character).
MARKDOWN_ACTIVE = "\\`*_[]<>|~$&"


def md_escape(text):
    """text as literal markdown inside a table cell: active characters escaped, and line
    breaks (which would end the table row) as <br>."""
    out = "".join("\\" + ch if ch in MARKDOWN_ACTIVE else ch for ch in str(text))
    return out.replace("\r\n", "<br>").replace("\n", "<br>").replace("\r", "<br>")


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
        for r, c in zip(rows, cells):
            c = [md_escape(x) for x in c]
            if r["verdict"].startswith("REGRESSION") or r["failed_in_new"] is not None \
                    or r["status"] == "missing":
                c = c[:-1] + [f"**{c[-1]}**"]
            lines.append("| " + " | ".join(c) + " |")
        return "\n".join(lines)
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h)
              for i, h in enumerate(COLUMNS)]
    out = ["  ".join(h.ljust(w) for h, w in zip(COLUMNS, widths)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    for c in cells:
        out.append("  ".join(x.ljust(w) for x, w in zip(c, widths)).rstrip())
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=EXIT_CODES,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base_dir", metavar="BASE_DIR")
    ap.add_argument("new_dir", metavar="NEW_DIR")
    ap.add_argument("--threshold", type=parse_threshold, default=parse_threshold(DEFAULT_THRESHOLD),
                    help="slowdown of the median samples/s that fails, e.g. 5%% (default 5%%)")
    ap.add_argument("--alpha", type=parse_alpha, default=DEFAULT_ALPHA,
                    help="significance level of the Mann-Whitney U test (default 0.05)")
    ap.add_argument("--format", choices=["text", "markdown"], default="text")
    ap.add_argument("--allow-missing", action="store_true",
                    help="a configuration of BASE missing or skipped in NEW is a warning, "
                         "not exit 4")
    ap.add_argument("--allow-mixed-runs", action="store_true",
                    help="compare a folder that holds rows of several runs (not exit 7); a "
                         "configuration must still come from one run")
    args = ap.parse_args(argv)
    try:
        base, new = load_run(args.base_dir), load_run(args.new_dir)
        run_warnings = check_runs(base, new, args.allow_mixed_runs)
        rows, warnings = compare(base, new, args.threshold, args.alpha)
    except InputError as e:
        print(f"compare.py: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Refused as e:
        print(f"compare.py: error: {e}", file=sys.stderr)
        return e.code
    diffs = env_differences(base.env, new.env)
    md = args.format == "markdown"
    # Names, run ids and env.json values are the user's text: literal in markdown.
    lit = md_escape if md else str
    print(("### " if md else "") + f"trainbench compare: {lit(' + '.join(base.run_ids))} (base) -> "
          f"{lit(' + '.join(new.run_ids))} (new), threshold {fmt.percent(args.threshold)}, "
          f"alpha {args.alpha:g}")
    print()
    print(format_table(rows, args.format))
    if diffs:
        print()
        print("Environment differences (may explain changes):")
        for name, a, b in diffs:
            print(f"{'- ' if md else '  '}{name}: {lit(a)} -> {lit(b)}")
            print(f"compare.py: warning: environments differ: {name}: {a} -> {b}", file=sys.stderr)
    for w in run_warnings + warnings:
        print(f"compare.py: warning: {w}", file=sys.stderr)
    problems = gate(base, new, rows, args.allow_missing)
    print()
    if not problems:
        print("No regression beyond the threshold and the noise; every configuration of the "
              "base was measured in the new run.")
        return EXIT_OK
    for code, message in problems:
        print(f"{'- ' if md else ''}FAIL (exit {code}): {lit(printable(message))}")
        print(f"compare.py: error: {message}", file=sys.stderr)
    return problems[0][0]


if __name__ == "__main__":
    sys.exit(main())
