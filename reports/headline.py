"""The report's first screen: one line per workload (fastest CPU, fastest single GPU and
multi-GPU configuration, speedups over the fastest CPU, scaling efficiency, loss check),
whether any GPU ran and why not, and how many configurations ran on a disturbed machine.

Why a module of its own: the headline is what a reader deciding on GPUs sees first, so
its picks are computed once here (from the figures derive.py already filled in) and both
the HTML (headline_html) and summary.json (summary_json.py) read the same Line objects.
Picks use the trait columns only: trainbench rows (implementation), device_kind,
world_size, oracle; never a backend's name. Rows whose loss check failed are never
picked as "fastest" (the correctness line names them instead). Where a CPU, GPU or
reference configuration ran and failed, or a CPU or GPU one was skipped, the headline
says so with the reason, never "no CPU row" or "no reference row".
"""

from dataclasses import dataclass, field
from html import escape as esc

import derive
import fmt
import tables
from derive import ASYNC_LOSS_RTOL, LOSS_RTOL, OURS


@dataclass
class Line:
    """One workload's headline figures (Groups from derive; None where nothing ran)."""
    workload: str
    best_cpu: object = None
    best_gpu: object = None         # fastest single-GPU configuration (world_size 1)
    best_multi: object = None       # fastest multi-GPU configuration (world_size > 1)
    gpu_skipped: list = field(default_factory=list)   # [(reason, count)] of its GPU rows
    gpu_failed: list = field(default_factory=list)    # [(reason, configurations)] that failed
    cpu_failed: list = field(default_factory=list)    # the same for CPU baseline candidates
    cpu_skipped: list = field(default_factory=list)   # [(reason, count)] of CPU candidates' rows
    ref_failed: list = field(default_factory=list)    # the same for the reference (oracle)
    checked: int = 0                # configurations whose loss matched the reference
    mismatches: list = field(default_factory=list)    # Groups whose loss did not
    unchecked: int = 0              # non-oracle configurations not checked (no same-cells ref)
    has_ref: bool = False

    @property
    def picks(self):
        return [g for g in (self.best_cpu, self.best_gpu, self.best_multi) if g is not None]


def _fastest(groups, pred):
    cands = [g for g in groups if g.ours and g.loss_state != "mismatch" and pred(g)]
    return max(cands, key=lambda g: g.med_sps) if cands else None


def _reason_counts(rows):
    out = {}
    for r in rows:
        out[r["reason"]] = out.get(r["reason"], 0) + 1
    return list(out.items())


def _is_gpu_row(r):
    """A result row (any state) of a GPU configuration, by its trait cell."""
    return r.get("device_kind") == "gpu"


def failed_reasons(groups):
    """[(reason, configurations)] of configurations that failed in every repetition (derive
    Groups without rows), one entry per distinct reason, in first-appearance order."""
    out = {}
    for g in groups:
        for reason in dict.fromkeys(r["reason"] for r in g.failures):
            out[reason] = out.get(reason, 0) + 1
    return list(out.items())


def failed_text(reasons):
    """'failed: 2× rank 1 killed; 1× out of memory'."""
    return "failed: " + "; ".join(f"{n}× {reason}" for reason, n in reasons)


def skipped_text(reasons):
    """'skipped: 2× no CUDA device; 1× NCCL not found'."""
    return "skipped: " + "; ".join(f"{n}× {reason}" for reason, n in reasons)


def lines(summary):
    """[Line] in workload order."""
    out = []
    for w in summary.workloads:
        gs = w.groups
        line = Line(w.name, best_cpu=w.cpu_base,
                    best_gpu=_fastest(gs, lambda g: g.device_kind == "gpu" and g.world_size == 1),
                    best_multi=_fastest(gs, lambda g: g.device_kind == "gpu" and g.world_size > 1
                                        and not tables.shared_device(g.devices, tables.group_bus_ids(g))),
                    gpu_skipped=_reason_counts([r for r in w.not_measured
                                                if r["state"] == "skipped" and _is_gpu_row(r)]),
                    gpu_failed=failed_reasons(g for g in w.failed if g.device_kind == "gpu"),
                    cpu_failed=failed_reasons(g for g in w.failed if derive.is_cpu_candidate(g)),
                    cpu_skipped=_reason_counts([r for r in w.not_measured if r["state"] == "skipped"
                                                and derive.is_cpu_candidate_row(r)]),
                    ref_failed=failed_reasons(g for g in w.failed if g.oracle),
                    checked=sum(1 for g in gs if g.loss_state == "match"),
                    mismatches=[g for g in gs if g.loss_state == "mismatch"],
                    unchecked=sum(1 for g in gs if g.loss_state in ("noref", "unchecked")),
                    has_ref=w.ref is not None)
        out.append(line)
    return out


def gpu_ran(summary):
    return any(g.device_kind == "gpu" for w in summary.workloads for g in w.groups)


def gpu_failed_reasons(summary):
    """[(reason, configurations)] of the GPU configurations that failed in every repetition."""
    return failed_reasons(g for w in summary.workloads for g in w.failed if g.device_kind == "gpu")


def no_gpu_reasons(summary):
    """Why no GPU ran: [(reason, count)] of the skipped GPU rows, trainbench's own before
    the peers', then each run's env.json gpu_unavailable_reason where those do not say it."""
    rows = [r for r in summary.skipped if _is_gpu_row(r)]
    reasons = _reason_counts(sorted(rows, key=lambda r: r.get("implementation") != OURS))
    for run in summary.runs:
        why = run.env.get("gpu_unavailable_reason")
        if why and not any(why in reason for reason, _ in reasons):
            where = f"run {run.run_id}: " if len(summary.runs) > 1 else ""
            reasons.insert(0, (f"{where}{why} (env.json)", 0))
    return reasons


def disturbed_counts(summary):
    """(disturbed configurations, configurations, disturbed repetitions, repetitions
    judged: those with a disturbed cell, repetitions)."""
    gs = [g for w in summary.workloads for g in w.groups]
    return (sum(1 for g in gs if g.disturbed), len(gs), sum(g.disturbed_reps for g in gs),
            sum(g.judged_reps for g in gs), sum(len(g.rows) for g in gs))


# --- HTML -------------------------------------------------------------------------

def _pick_cell(g, multi_host):
    if g is None:
        return None
    return (f"<b>{esc(g.label(multi_host))}</b> <br>{fmt.sps(g.med_sps)} samples/s"
            + tables.failed_badge(g) + tables.disturbed_badge(g))


def _missing_cpu_cell(line):
    """Why there is no CPU baseline: its CPU rows failed or were skipped, with the reasons;
    "no CPU row" only where the run had none."""
    parts = []
    if line.cpu_failed:
        parts.append(f'<span class="bad">CPU {esc(failed_text(line.cpu_failed))}</span>')
    if line.cpu_skipped:
        parts.append(f'<span class="muted">CPU {esc(skipped_text(line.cpu_skipped))}</span>')
    if parts:
        return "<br>".join(parts), "wrap"
    return '<span class="muted">no CPU row</span>', ""


def _speedup_cell(g, line, multi_host):
    if g is None or g.speedup_cpu is None:
        return "–", "muted"
    text = f"<b>{fmt.speedup(g.speedup_cpu)}</b>"
    if g.cpu_base is not line.best_cpu:
        text += f' <span class="muted">vs {esc(g.cpu_base.label(multi_host))}</span>'
    return text, "num"


def _missing_gpu_cell(line):
    parts = []
    if line.gpu_failed:
        parts.append(f'<span class="bad">{esc(failed_text(line.gpu_failed))}</span>')
    if line.gpu_skipped:
        parts.append(f'<span class="muted">{esc(skipped_text(line.gpu_skipped))}</span>')
    if parts:
        return "<br>".join(parts), "wrap"
    return '<span class="muted">not run</span>', ""


def _check_cell(line, multi_host):
    if line.mismatches:
        names = ", ".join(esc(g.label(multi_host)) for g in line.mismatches)
        return f"✗ {len(line.mismatches)} MISMATCH: {names}", "bad"
    if not line.has_ref and line.ref_failed:
        return f"not checked: the reference {esc(failed_text(line.ref_failed))}", "bad wrap"
    if not line.has_ref:
        return "not checked (no reference row)", "muted"
    if not line.checked:
        if not line.unchecked:
            return "only the reference ran", "muted"
        return ("not checked (the reference trained other settings: workload cells differ)",
                "muted wrap")
    rest = f"; {line.unchecked} not checked" if line.unchecked else ""
    return f"✓ all {line.checked} checked match{rest}", "good"


def headline_table(summary):
    ls = lines(summary)
    mh = summary.multi_host
    any_gpu = any(l.best_gpu for l in ls) or gpu_ran(summary)
    any_multi = any(l.best_multi for l in ls)
    head = ["workload", "fastest CPU (the speedup baseline)"]
    if any_gpu:
        head += ["fastest single GPU", "speedup vs fastest CPU"]
    if any_multi:
        head += ["fastest multi-GPU", "multi-GPU speedup vs fastest CPU", "scaling efficiency"]
    head.append("final loss vs reference")
    body = []
    for l in ls:
        row = [(f'<a href="#{anchor(l.workload)}">{esc(l.workload)}</a>', "")]
        row.append((_pick_cell(l.best_cpu, mh), "") if l.best_cpu else _missing_cpu_cell(l))
        if any_gpu:
            if l.best_gpu:
                row += [(_pick_cell(l.best_gpu, mh), ""), _speedup_cell(l.best_gpu, l, mh)]
            else:
                row += [_missing_gpu_cell(l), ("–", "muted")]
        if any_multi:
            m = l.best_multi
            if m:
                eff = ("–", "muted")
                if m.efficiency is not None:
                    eff = (f'<b>{fmt.percent(m.efficiency)}</b> <span class="muted">vs '
                           f"{esc(m.efficiency_base.label(mh))}</span>", "num")
                row += [(_pick_cell(m, mh), ""), _speedup_cell(m, l, mh), eff]
            else:
                row += [_missing_gpu_cell(l), ("–", "muted"), ("–", "muted")]
        row.append(_check_cell(l, mh))
        body.append(row)
    return tables._table(head, body, "results glance")


def anchor(name, prefix="w-"):
    """The id of a section: a workload's is w-<name> with every non-alphanumeric as '-'."""
    return prefix + "".join(c if c.isalnum() else "-" for c in name)


def gpu_sentence(summary):
    """'No GPU ran: ...' with the reasons, or '' when a GPU configuration ran."""
    if gpu_ran(summary):
        return ""
    # GPU configurations that ran and failed first: they are why, not an absent GPU.
    failed = [f"{esc(reason)} ({n} GPU configuration(s) failed)"
              for reason, n in gpu_failed_reasons(summary)]
    reasons = no_gpu_reasons(summary)
    if reasons or failed:
        why = "; ".join(failed + [f"{esc(reason)}" + (f" ({n} configuration(s) skipped)" if n else "")
                                  for reason, n in reasons])
    else:
        why = "no GPU backend was part of this run"
    return (f'<p class="nogpu" id="no-gpu"><b>No GPU ran: this report compares CPU backends '
            f"only.</b> Why: {why}.</p>")


def disturbed_sentence(summary):
    n, total, reps, judged, _ = disturbed_counts(summary)
    if not n:
        return ""
    text = (f'<p class="warn" id="disturbed-count"><b>{tables.DISTURBED_BADGE}: {n} of {total} '
            f"configuration(s)</b> ({reps} of {judged} repetitions judged) ran while other processes "
            "or the hypervisor took more than 5% of the CPU time: their timings are not "
            "trustworthy (marked below; re-run on a quiet machine).")
    picked = [(l.workload, g) for l in lines(summary) for g in l.picks if g.disturbed]
    if picked:
        names = "; ".join(f"{w}: {g.label(summary.multi_host)}" for w, g in picked)
        text += f" <b>Headline figures from disturbed rows:</b> {esc(names)}."
    return text + "</p>"


def baseline_note():
    return ('<p class="muted small">Speedups are median samples/s over that of the fastest '
            "CPU configuration of the same workload and run (any threads, ranks or workers; "
            "named in each table). The float64 <i>reference</i> is a correctness anchor, not a "
            "baseline; PyTorch peers and rows whose loss check failed are never picked. "
            f"Loss tolerance {LOSS_RTOL:g} (asynchronous rows {ASYNC_LOSS_RTOL:g}).</p>")


def headline_html(summary):
    """The top of the report: GPU sentence, disturbed count, per-workload table."""
    return "".join([gpu_sentence(summary), disturbed_sentence(summary),
                    headline_table(summary), baseline_note()])
