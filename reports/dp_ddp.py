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

comparisons(summary) -> [DpDdp]; section_html(summary); figures(summary) -> dict for
summary.json.
"""

from dataclasses import dataclass, field
from html import escape as esc

from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter

import fmt
import plots
from derive import _order_key
from tables import _table, shared_device

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


@dataclass
class Series:
    """One line of the head-to-head: an implementation's backend and settings."""
    label: str
    implementation: str
    parallelism: str
    groups: dict = field(default_factory=dict)   # GPU count -> Group


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
    """The head-to-head of workload w, or None when w lacks dp or ddp GPU rows."""
    gpu = [g for g in w.groups if _is_gpu(g)]
    par = lambda g: g.traits.get("parallelism")  # noqa: E731
    if not any(par(g) == "dp" for g in gpu) or not any(par(g) == "ddp" for g in gpu):
        return None
    notes, chosen = [], []
    for g in sorted(gpu, key=_order_key):
        if par(g) not in ("dp", "ddp") and not (par(g) == "none" and g.world_size == 1):
            continue
        if shared_device(g.devices):
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
                gs = [s.groups[n] for s in series.values()
                      if s.implementation == impl and s.parallelism == kind and n in s.groups]
                best[kind] = max(gs, key=lambda g: g.med_sps) if gs else None
            if best["dp"] and best["ddp"]:
                ratios.setdefault(impl, {})[n] = (best["ddp"].med_sps / best["dp"].med_sps,
                                                  best["ddp"], best["dp"])
    return DpDdp(w.name, counts, list(series.values()), ratios, notes)


def comparisons(summary):
    return [c for c in (comparison(w) for w in summary.workloads) if c is not None]


# ---- HTML ------------------------------------------------------------------------------

def throughput_table(c):
    head = ["configuration"] + [f"{n} GPU{'s' if n > 1 else ''} samples/s" for n in c.counts]
    rows = []
    for s in c.series:
        rows.append([(esc(s.label), "")] +
                    [(fmt.sps(s.groups[n].med_sps) if n in s.groups else "–", "num")
                     for n in c.counts])
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
            if _phases_measured(g):
                cells = [(fmt.seconds(g.phases.get(p, 0.0)), "num") for p in PHASES]
            else:
                cells = [("not measured", "muted")] * (len(PHASES) - 1) + \
                        [(fmt.seconds(g.time_per_epoch), "num")]
            rows.append([(str(n), "num"), (esc(s.label), ""),
                         (fmt.seconds(g.time_per_epoch), "num")] + cells)
    return _table(head, rows, "results")


# ---- figures ---------------------------------------------------------------------------

def throughput_plot(c):
    """samples/s vs GPU count, one line per configuration: DataParallel solid, DDP dashed,
    1-GPU rows as single markers; log2 GPU axis, linear samples/s from 0."""
    fig = Figure(figsize=(7.5, 4.6))
    ax = fig.add_subplot(1, 1, 1)
    style = {"dp": "-", "ddp": "--", "none": ""}
    div, unit = plots.sps_unit([g.max_sps for s in c.series for g in s.groups.values()])
    for i, s in enumerate(c.series):
        ns = sorted(s.groups)
        gs = [s.groups[n] for n in ns]
        ax.errorbar(ns, [g.med_sps / div for g in gs],
                    yerr=[[(g.med_sps - g.min_sps) / div for g in gs],
                          [(g.max_sps - g.med_sps) / div for g in gs]],
                    marker="os^Dv<>"[i % 7], capsize=3, linestyle=style[s.parallelism] or "none",
                    color=plots.backend_color(gs[0]), label=s.label)
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
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return plots._png(fig)


def phases_plot(c):
    """Stacked seconds per epoch by phase, one bar per (GPU count, configuration), grouped
    by GPU count; rows without phase times are one grey "not measured" bar."""
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
    ax.set_yticks(ys, [f"{n} GPU{'s' if n > 1 else ''}: {s.label}" for n, s, _ in bars])
    ax.xaxis.set_major_formatter(EngFormatter(unit="s"))
    ax.set_xlabel("time per epoch (median), by phase")
    ax.set_title(f"{c.workload}: where the time goes, DataParallel vs DDP")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
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
    string keys; phases None where not measured)."""
    out = []
    for c in comparisons(summary):
        out.append({
            "workload": c.workload,
            "gpus": c.counts,
            "series": [{
                "label": s.label, "implementation": s.implementation,
                "parallelism": s.parallelism,
                "samples_per_s": {str(n): g.med_sps for n, g in s.groups.items()},
                "phases_s_per_epoch": {str(n): (dict(g.phases) if _phases_measured(g) else None)
                                       for n, g in s.groups.items()},
            } for s in c.series],
            "ddp_over_dp": {impl: {str(n): v[0] for n, v in by_n.items()}
                            for impl, by_n in c.ratios.items()},
            "notes": c.notes,
        })
    return {"dp_vs_ddp": out}
