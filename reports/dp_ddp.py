"""DataParallel against DistributedDataParallel, head to head, at each GPU count.

Why a section of its own: the question "one process driving N GPUs (DataParallel) or
one process per GPU (DDP)?" is answered by the same workload run both ways at the
same GPU counts, trainbench and the PyTorch peers side by side — the familiar
"1 GPU vs N GPUs, framework by framework" table — plus where the time goes (the
per-phase seconds per epoch) at each count.

Which rows: GPU rows (trait device_kind gpu) of one workload whose parallelism trait
is dp or ddp, and the one-replica GPU rows (parallelism none) at world size 1 as the
1-GPU column; never decided by backend names. The section exists for a workload only
when it has both dp and ddp GPU rows; otherwise nothing is said. cuda-dp rows whose
replicas share a GPU (devices "0,0") are left out with a note: their world size is not
a GPU count. GPU count = world_size (cuda-dp's replicas, DDP's ranks).
A configuration that failed in every repetition (derive's Workload.failed) keeps its
place, as in the other sections: "failed: <why> (5 of 5 repetitions)" in the tables,
one entry per distinct reason, a red ✗ at its GPU count in the samples/s plot (no line
drawn across it), a "failed" row in the phases plot. A configuration that failed in
some repetitions shows "⚠ 1 of 3 reps failed" beside its figure (the reasons in its
title). Its absence would read as "not run"; ratios are of measured configurations
only. The workload's own section lists the same reasons once, in its notes.

comparisons(summary) -> [DpDdp]; section_html(summary); figures(summary) -> dict for
summary.json.
"""

from dataclasses import dataclass, field
from html import escape as esc

from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter

import fmt
import plots
from derive import _order_key, by_reason
from tables import _table, failed_badge, group_bus_ids, shared_device

PHASES = ["transfer", "forward", "backward", "comm", "optimizer", "other"]
PHASE_COLUMNS = [f"{p}_s" for p in PHASES if p != "other"]
KIND = {"none": "1 GPU", "dp": "DataParallel", "ddp": "DDP"}
IMPL = {"trainbench": "trainbench", "pytorch": "PyTorch"}

FORMULAS = [
    ("DP vs DDP: GPU count", "world_size of a GPU row (cuda-dp / torch-dp replicas, DDP ranks); "
                             "rows whose devices repeat a GPU (shared-device) are left out"),
    ("DP vs DDP: DDP ÷ DP", "at one GPU count and implementation (trainbench or PyTorch): median "
                           "samples/s of its fastest ddp configuration / median samples/s of its "
                           "fastest dp configuration; above 1: DDP is faster"),
    ("DP vs DDP: phases", "median over repetitions of <phase>_s / epochs, as in the workload "
                          "tables; a row whose phase cells are empty (PyTorch peers on GPUs) "
                          "shows them as not measured"),
]
FAILED_CELL = "bad wrap"


@dataclass
class Series:
    """One line of the head-to-head: an implementation's backend and settings."""
    label: str
    implementation: str
    parallelism: str
    groups: dict = field(default_factory=dict)   # GPU count -> Group (failed ones too)

    @property
    def measured(self):
        """GPU count -> Group of the configurations with a measured repetition."""
        return {n: g for n, g in self.groups.items() if g.rows}

    @property
    def failed_at(self):
        """The GPU counts where the configuration failed in every repetition."""
        return sorted(n for n, g in self.groups.items() if not g.rows)


@dataclass
class DpDdp:
    workload: str
    counts: list                                  # GPU counts, ascending
    series: list                                  # Series, trainbench first
    ratios: dict                                  # implementation -> {count: (ratio, ddp, dp)}
    notes: list



def _phases_measured(g):
    return any(r.get(c) is not None for r in g.rows for c in PHASE_COLUMNS)


def _is_gpu(g):
    return g.traits.get("device_kind") == "gpu"


def _series_label(g, multi_host):
    text = f"{IMPL.get(g.traits.get('implementation'), g.traits.get('implementation'))} " \
           f"{KIND[g.traits.get('parallelism')]} ({g.backend})"
    if g.settings:
        text += f" {g.settings}"
    return f"{g.origin}: {text}" if multi_host else text


def comparison(w):
    """The head-to-head of workload w, or None when w lacks dp or ddp GPU rows (measured or
    failed: a DataParallel that failed at every count is part of the answer)."""
    gpu = [g for g in w.groups + w.failed if _is_gpu(g)]
    par = lambda g: g.traits.get("parallelism")  # noqa: E731
    if not any(par(g) == "dp" for g in gpu) or not any(par(g) == "ddp" for g in gpu):
        return None
    notes, chosen = [], []
    for g in sorted(gpu, key=_order_key):
        if par(g) not in ("dp", "ddp") and not (par(g) == "none" and g.world_size == 1):
            continue
        if g.world_size is None:   # a failed row's setup cells may be empty
            notes.append(f"{g.label(w.multi_host)} failed ({g.why_failed()}) and its row has no "
                         "world size: not placed at a GPU count")
            continue
        if shared_device(g.devices, group_bus_ids(g)):  # by PCI bus id where the rows have them
            notes.append(f"{g.label(w.multi_host)} left out: shared-device (replicas on GPUs "
                         f"{g.devices}), its world size is not a GPU count")
            continue
        chosen.append(g)
    series = {}
    for g in chosen:
        label = _series_label(g, w.multi_host)
        s = series.setdefault(label, Series(label, g.traits.get("implementation"), par(g)))
        if g.world_size in s.groups:
            notes.append(f"{label} at {g.world_size} GPUs: several rows (devices "
                         f"{s.groups[g.world_size].devices} and {g.devices}); the first is shown")
            continue
        s.groups[g.world_size] = g
    counts = sorted({n for s in series.values() for n in s.groups})
    ratios = {}
    for impl in dict.fromkeys(s.implementation for s in series.values()):
        for n in counts:
            best = {}
            for kind in ("dp", "ddp"):
                gs = [s.measured[n] for s in series.values()
                      if s.implementation == impl and s.parallelism == kind and n in s.measured]
                best[kind] = max(gs, key=lambda g: g.med_sps) if gs else None
            if best["dp"] and best["ddp"]:
                ratios.setdefault(impl, {})[n] = (best["ddp"].med_sps / best["dp"].med_sps,
                                                  best["ddp"], best["dp"])
    return DpDdp(w.name, counts, list(series.values()), ratios, notes)


def comparisons(summary):
    return [c for c in (comparison(w) for w in summary.workloads) if c is not None]


# ---- HTML ------------------------------------------------------------------------------

def _failed_cell(g):
    """'failed: <why> (5 of 5 repetitions)': each distinct reason of a configuration that
    failed in every repetition, with how many."""
    whys = [f'{esc(reason)} <span class="muted">({len(rs)} of {g.reps_total} repetitions)</span>'
            for reason, rs in by_reason(g.failures)]
    return "failed: " + "; ".join(whys), FAILED_CELL


def _sps_cell(g):
    """A configuration's median samples/s, with the "⚠ 1 of 3 reps failed" badge where some
    repetitions failed; _failed_cell where every one did; "–" where it did not run."""
    if g is None:
        return "–", "num"
    if not g.rows:
        return _failed_cell(g)
    return fmt.sps(g.med_sps) + failed_badge(g), "num"


def throughput_table(c):
    head = ["configuration"] + [f"{n} GPU{'s' if n > 1 else ''} samples/s" for n in c.counts]
    rows = []
    for s in c.series:
        rows.append([(esc(s.label), "")] + [_sps_cell(s.groups.get(n)) for n in c.counts])
    for impl, by_n in c.ratios.items():
        rows.append([(f"<b>{esc(IMPL.get(impl, impl))}: DDP ÷ DP</b>", "")] +
                     [(fmt.speedup(by_n[n][0]) if n in by_n else "–", "num") for n in c.counts])
    return _table(head, rows, "results")


def phases_table(c):
    head = ["GPUs", "configuration", "time per epoch (s)"] + \
           [f"{p} (s/epoch)" for p in PHASES]
    rows = []
    for n in c.counts:
        for s in c.series:
            g = s.groups.get(n)
            if g is None:
                continue
            if not g.rows:
                rows.append([(str(n), "num"), (esc(s.label), ""), _failed_cell(g)]
                            + [("–", "muted")] * len(PHASES))
                continue
            if _phases_measured(g):
                cells = [(fmt.seconds(g.phases.get(p, 0.0)), "num") for p in PHASES]
            else:
                cells = [("not measured", "muted")] * (len(PHASES) - 1) + \
                        [(fmt.seconds(g.time_per_epoch), "num")]
            rows.append([(str(n), "num"), (esc(s.label), ""),
                         (fmt.seconds(g.time_per_epoch), "num")] + cells)
    return _table(head, rows, "results")


# ---- figures ---------------------------------------------------------------------------

def _legend(ax):
    """The legend beside the plot; none where every configuration failed (nothing drawn
    to name: matplotlib would warn "No artists with labels found")."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))


def _failed_text(g, n):
    return f"{g.backend}{' ' + g.settings if g.settings else ''} ×{n} {plots.FAILED_TEXT}"


def throughput_plot(c):
    """samples/s vs GPU count, one line per configuration: DataParallel solid, DDP dashed,
    1-GPU rows as single markers; log2 GPU axis, linear samples/s from 0. A count where a
    configuration failed: a red ✗ on the axis, and its line broken there."""
    fig = Figure(figsize=(7.5, 4.6))
    ax = fig.add_subplot(1, 1, 1)
    style = {"dp": "-", "ddp": "--", "none": ""}
    div, unit = plots.sps_unit([g.max_sps for s in c.series for g in s.measured.values()])
    for i, s in enumerate(c.series):
        for n in s.failed_at:
            plots.mark_failed(ax, n, _failed_text(s.groups[n], n))
        by_n = s.measured
        if not by_n:
            continue
        ns, ys = plots._with_gaps([(n, g.med_sps / div) for n, g in by_n.items()], s.failed_at)
        ax.errorbar(ns, ys, yerr=plots.whiskers(ns, by_n, div), marker="os^Dv<>"[i % 7], capsize=3,
                    linestyle=style[s.parallelism] or "none",
                    color=plots.backend_color(next(iter(by_n.values()))), label=s.label)
    if len(c.counts) > 1:
        ax.set_xscale("log", base=2)
    ax.set_xticks(c.counts, [str(n) for n in c.counts])
    ax.minorticks_off()
    ax.set_xlabel("GPUs (world size)")
    ax.set_ylabel(f"{unit} (median, whiskers min–max)")
    ax.yaxis.set_major_formatter(EngFormatter())
    ax.set_ylim(bottom=0)
    ax.set_title(f"{c.workload}: DataParallel vs DDP")
    ax.grid(alpha=0.3)
    _legend(ax)
    return plots._png(fig)


def phases_plot(c):
    """Stacked seconds per epoch by phase, one bar per (GPU count, configuration), grouped
    by GPU count; rows without phase times are one grey "not measured" bar, a
    configuration that failed is its row saying "✗ failed: <why>"."""
    bars = [(n, s, s.groups[n]) for n in c.counts for s in c.series if n in s.groups]
    fig = Figure(figsize=(8.5, 1.6 + 0.36 * len(bars)))
    ax = fig.add_subplot(1, 1, 1)
    ys = list(range(len(bars)))[::-1]
    left = [0.0] * len(bars)
    for p in PHASES:
        vals = [g.phases.get(p, 0.0) if _phases_measured(g) else 0.0 for _, _, g in bars]
        if any(vals):
            ax.barh(ys, vals, left=left, color=plots.PHASE_COLORS[p], label=p)
            left = [a + b for a, b in zip(left, vals)]
    unmeasured = [g.time_per_epoch if not _phases_measured(g) else 0.0 for _, _, g in bars]
    if any(unmeasured):
        ax.barh(ys, unmeasured, color="#dddddd", hatch="//", edgecolor="#999999",
                label="not measured (whole epoch)")
    for y, (_, _, g) in zip(ys, bars):
        if not g.rows:
            plots.mark_failed_row(ax, y, g.why_failed())
    ax.set_yticks(ys, [f"{n} GPU{'s' if n > 1 else ''}: {s.label}" for n, s, _ in bars])
    ax.set_ylim(-0.6, len(bars) - 0.4)   # a failed row has no bar: autoscaling would skip it
    ax.xaxis.set_major_formatter(EngFormatter(unit="s"))
    ax.set_xlabel("time per epoch (median), by phase")
    ax.set_title(f"{c.workload}: where the time goes, DataParallel vs DDP")
    ax.grid(axis="x", alpha=0.3)
    _legend(ax)
    return plots._png(fig)


def section_html(summary, figure):
    """The section, or "" when no workload has both dp and ddp GPU rows. figure(png, alt)
    embeds a plot (page.py's _figure)."""
    cs = comparisons(summary)
    if not cs:
        return ""
    out = ['<section id="dp-vs-ddp"><h2>DataParallel vs DDP</h2>',
           '<p class="meta">The same workload on GPUs as one process driving every GPU '
           "(DataParallel: cuda-dp, torch-dp) and as one process per GPU (DDP: cuda-ddp, "
           "torch-ddp), at each GPU count, trainbench and the PyTorch peers together; the 1-GPU "
           "column also holds the one-replica rows (cuda, torch-cuda). Chosen by the parallelism "
           "and device_kind columns. DDP ÷ DP = fastest DDP samples/s / fastest DP samples/s of "
           "one implementation at that count.</p>"]
    for c in cs:
        out.append(f"<h3>{esc(c.workload)}</h3>")
        out.append(throughput_table(c))
        out.append(figure(throughput_plot(c),
                          f"{c.workload}: DataParallel vs DDP, samples/s vs GPUs"))
        out.append(phases_table(c))
        out.append(figure(phases_plot(c),
                          f"{c.workload}: DataParallel vs DDP, seconds per epoch by phase"))
        if c.notes:
            out.append('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in c.notes)
                       + "</ul>")
    out.append("</section>")
    return "".join(out)


def figures(summary):
    """{"dp_vs_ddp": [...]}: the head-to-head's numbers for summary.json (GPU counts as
    string keys; phases None where not measured; a count where a configuration failed in
    every repetition has no samples/s, only failed_reasons)."""
    out = []
    for c in comparisons(summary):
        out.append({
            "workload": c.workload,
            "gpus": c.counts,
            "series": [{
                "label": s.label, "implementation": s.implementation,
                "parallelism": s.parallelism,
                "samples_per_s": {str(n): g.med_sps for n, g in s.measured.items()},
                "phases_s_per_epoch": {str(n): (dict(g.phases) if _phases_measured(g) else None)
                                       for n, g in s.measured.items()},
                # A count whose configuration failed in some or every repetition: why, how often.
                "failed_reasons": {str(n): [{"reason": r, "count": len(rs)} for r, rs in by_reason(g.failures)]
                                   for n, g in s.groups.items() if g.failures},
            } for s in c.series],
            "ddp_over_dp": {impl: {str(n): v[0] for n, v in by_n.items()}
                            for impl, by_n in c.ratios.items()},
            "notes": c.notes,
        })
    return {"dp_vs_ddp": out}
