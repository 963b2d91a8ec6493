"""summary.json: every derived figure the report shows, for scripts (README "summary.json").

Why: a script that wants "the speedup of cuda-ddp ×4" should not scrape HTML. The file is
a dict of sections assembled in one place: SECTIONS maps a key to a function
(summary) -> JSON value, in order; a report module adds its section with one line,
`summary_json.section("name")(fn)` (or the decorator form), and build() calls them all.
Units are in the key names (_per_s, _s, fractions as 0..1); a figure that does not apply
is null. Non-finite numbers become null, so the file is strict JSON.
"""

import json
import math
import os

import crossover
import dp_ddp
import efficiency
import headline
import loss_curves
import microbench
import time_to_target
import page
import tables
from derive import by_reason
from load import printable

SUMMARY_SCHEMA_VERSION = 1
SECTIONS = {}   # key -> fn(summary) -> JSON value; build() keeps this order


def section(name):
    """Decorator: register fn(summary) as summary.json's section `name`."""
    def register(fn):
        SECTIONS[name] = fn
        return fn
    return register


def _num(v):
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v if math.isfinite(v) else None
    return v


def ref(g, multi_host=False):
    """How a configuration is named elsewhere in the file: its label (machine: backend ×N ...)."""
    return None if g is None else g.label(multi_host)


def config(g, multi_host=False):
    """One configuration's figures (a Group of derive.py)."""
    return {
        "label": g.label(multi_host), "run_id": g.run_id, "host": g.host,
        "backend": g.backend, "world_size": g.world_size, "devices": g.devices,
        "threads": g.threads, "settings": g.settings, "precision": g.precision,
        "implementation": g.traits.get("implementation"), "device_kind": g.device_kind,
        "parallelism": g.traits.get("parallelism"),
        "repetitions": len(g.rows), "failed_repetitions": len(g.failures),
        "failed_reasons": _reasons(g),
        "median_samples_per_s": _num(g.med_sps), "min_samples_per_s": _num(g.min_sps),
        "max_samples_per_s": _num(g.max_sps), "cv_samples_per_s": _num(g.cv_sps),
        "noisy": g.noisy,
        "time_per_epoch_s": _num(g.time_per_epoch),
        "phase_s_per_epoch": {k: _num(v) for k, v in g.phases.items()},
        "speedup_vs_fastest_cpu": _num(g.speedup_cpu), "cpu_baseline": ref(g.cpu_base, multi_host),
        "speedup_vs_single_gpu": _num(g.speedup_gpu), "gpu_baseline": ref(g.gpu_base, multi_host),
        "scaling_efficiency": _num(g.efficiency),
        "scaling_base": ref(g.efficiency_base, multi_host),
        "final_loss": _num(g.final_loss), "final_accuracy": _num(g.final_accuracy),
        "loss_rel_err": _num(g.loss_rel_err), "loss_check": g.loss_state,
        "loss_tolerance": g.loss_rtol,
        "disturbed": g.disturbed, "disturbed_repetitions": g.disturbed_reps,
        "judged_repetitions": g.judged_reps,
        "others_cpu_share_max": _num(g.others_share_max),
        "steal_share_max": _num(g.steal_share_max),
    }


def _reasons(g):
    """[{reason, count}] of a configuration's failed repetitions."""
    return [{"reason": reason, "count": len(rs)} for reason, rs in by_reason(g.failures)]


def _failed_configs(groups, multi_host):
    """Configurations that failed in every repetition, named as the measured ones are."""
    return [{"label": g.label(multi_host), "workload": g.workload, "backend": g.backend,
             "world_size": g.world_size, "devices": g.devices, "threads": g.threads,
             "failed_repetitions": len(g.failures), "failed_reasons": _reasons(g)} for g in groups]


@section("runs")
def _runs(summary):
    return [{"run_id": str(run.run_id), "path": run.path,
             "host": (run.env.get("host") or {}).get("hostname")
             if isinstance(run.env.get("host"), dict) else None,
             "gpus": len(run.env["gpus"]) if isinstance(run.env.get("gpus"), list) else None}
            for run in summary.runs]


@section("headline")
def _headline(summary):
    mh = summary.multi_host
    out = {"gpu_ran": headline.gpu_ran(summary),
           "no_gpu_reasons": [] if headline.gpu_ran(summary) else
           [{"reason": r, "skipped_configurations": n} for r, n in headline.no_gpu_reasons(summary)],
           # GPU configurations that ran and failed: the headline's first reason no GPU ran.
           "gpu_failed_reasons": [{"reason": r, "failed_configurations": n}
                                  for r, n in headline.gpu_failed_reasons(summary)],
           "workloads": []}
    for line in headline.lines(summary):
        entry = {"workload": line.workload}
        for key, g in (("fastest_cpu", line.best_cpu), ("fastest_single_gpu", line.best_gpu),
                       ("fastest_multi_gpu", line.best_multi)):
            entry[key] = None if g is None else {
                "label": g.label(mh), "median_samples_per_s": _num(g.med_sps),
                "speedup_vs_fastest_cpu": _num(g.speedup_cpu), "cpu_baseline": ref(g.cpu_base, mh),
                "scaling_efficiency": _num(g.efficiency),
                "scaling_base": ref(g.efficiency_base, mh), "disturbed": g.disturbed}
        for key, reasons in (("cpu_skipped", line.cpu_skipped), ("gpu_skipped", line.gpu_skipped)):
            entry[key] = [{"reason": r, "count": n} for r, n in reasons]
        for key, reasons in (("cpu_failed", line.cpu_failed), ("gpu_failed", line.gpu_failed),
                             ("reference_failed", line.ref_failed)):
            entry[key] = [{"reason": r, "configurations": n} for r, n in reasons]
        entry["loss_checked_match"] = line.checked
        entry["loss_mismatches"] = [g.label(mh) for g in line.mismatches]
        entry["has_reference"] = line.has_ref
        out["workloads"].append(entry)
    return out


@section("workloads")
def _workloads(summary):
    mh = summary.multi_host
    return [{"workload": w.name, "meta": {k: _num(v) for k, v in w.meta.items()},
             "cpu_baseline": ref(w.cpu_base, mh), "gpu_baseline": ref(w.gpu_base, mh),
             "reference": ref(w.ref, mh),
             "configurations": [config(g, mh) for g in w.groups],
             "failed_configurations": _failed_configs(w.failed, mh),
             "loss_curves": {
                 "coinciding": [[g.label(mh) for g in c]
                                for c in loss_curves.clusters(w.groups) if len(c) > 1],
                 "relative_change": _num(loss_curves.relative_change(w.groups)),
                 "flat": loss_curves.is_flat(w.groups)}}
            for w in summary.workloads]


@section("weak_scaling")
def _weak(summary):
    mh = summary.multi_host
    return [{"stem": fam.stem, "workloads": fam.workloads, "notes": fam.notes,
             "members": [{"label": g.label(mh), "workload": g.workload, "n": g.weak_n,
                          "per_rank_batch": _num(g.per_rank_batch),
                          "median_samples_per_s": _num(g.med_sps),
                          "samples_per_s_per_rank": _num(g.sps_per_rank),
                          "weak_scaling_efficiency": _num(g.weak_efficiency),
                          "base": ref(g.weak_base, mh)} for g in fam.members],
             "failed": [dict(c, n=g.weak_n) for g, c in zip(fam.failed, _failed_configs(fam.failed, mh))]}
            for fam in summary.weak]


def _status_rows(rows):
    return [{"reason": reason, "count": len(rs),
             "configurations": [{"workload": r["workload"], "backend": r["backend"],
                                 "world_size": r["world_size"], "devices": r["devices"],
                                 "threads": r["threads"], "run_id": r["run_id"]} for r in rs]}
            for reason, rs in tables.skipped_by_reason(rows)]


@section("skipped")
def _skipped(summary):
    return {"count": len(summary.skipped), "by_reason": _status_rows(summary.skipped)}


@section("failed")
def _failed(summary):
    """Failed repetitions by reason; each configuration once per reason, with how many of
    its repetitions failed that way and how many it had (not once per failed row)."""
    by = {}
    for g, reason, rs in tables.failures(summary.workloads):
        by.setdefault(reason, []).append(
            {"workload": g.workload, "backend": g.backend, "world_size": g.world_size,
             "devices": g.devices, "threads": g.threads, "run_id": g.run_id,
             "repetitions_failed": len(rs), "repetitions": g.reps_total})
    return {"count": len(summary.failed),
            "by_reason": [{"reason": reason, "count": sum(c["repetitions_failed"] for c in cs),
                           "configurations": cs} for reason, cs in by.items()]}


@section("disturbed")
def _disturbed(summary):
    n, total, reps, judged, all_reps = headline.disturbed_counts(summary)
    return {"configurations": n, "of_configurations": total,
            "repetitions": reps, "of_repetitions": all_reps, "judged_repetitions": judged,
            "labels": [f"{w.name}: {g.label(summary.multi_host)}"
                       for w in summary.workloads for g in w.groups if g.disturbed]}


# Hardware efficiency (reports/efficiency.py): FLOPs, bytes, achieved rates, ceilings, % of roofline.
section("efficiency")(efficiency.figures)
# DataParallel vs DDP, time to target, crossovers (reports/dp_ddp.py, time_to_target.py, crossover.py).
section("dp_vs_ddp")(lambda summary: dp_ddp.figures(summary)["dp_vs_ddp"])
section("time_to_target")(lambda summary: time_to_target.figures(summary)["time_to_target"])
section("crossovers")(lambda summary: crossover.figures(summary)["crossovers"])


@section("microbenchmarks")
def _microbenchmarks(summary):
    """Per run folder, each Google Benchmark file's entries: name, times with their unit,
    iterations (of each repetition, for a median: microbench.shown_rows), repetitions and
    every numeric counter (FLOP/s, B/s: per second, unscaled)."""
    out = []
    for run in summary.runs:
        for bf in microbench.find(run.path):
            entries = [{k: _num(v) for k, v in b.items()
                        if k in ("name", "real_time", "cpu_time", "time_unit", "iterations",
                                 "repetitions") or k in bf.counters} for b in bf.rows]
            out.append({"run_id": run.run_id, "file": os.path.basename(bf.path), "binary": bf.binary,
                        "error": bf.error, "benchmarks": entries})
    return out


def build(summary):
    """The whole document: schema version, then every registered section in order."""
    doc = {"summary_schema_version": SUMMARY_SCHEMA_VERSION,
           "generator": "reports/render.py"}
    for name, fn in SECTIONS.items():
        doc[name] = _strict(fn(summary))
    return doc


def _strict(v):
    """v with every non-finite float as None, recursively (a section module may hand back
    a NaN median; strict JSON has no NaN), tuples as lists and keys as strings."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): _strict(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_strict(x) for x in v]
    return v


def path_beside(report_path):
    """summary.json beside report.html; beside X.html (a merged report) X.summary.json."""
    folder, name = os.path.split(os.path.abspath(report_path))
    stem = name[:-5] if name.endswith(".html") else name
    return os.path.join(folder, "summary.json" if stem == "report" else f"{stem}.summary.json")


def text_of(doc):
    """doc as strict JSON text (a path's non-UTF-8 bytes as \\udcXX escapes)."""
    return printable(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def write(path, doc):
    """Write doc as strict JSON, atomically (a temporary file beside it, then os.replace)."""
    page.write_atomic(path, text_of(doc))
