"""Crossovers: where one configuration starts to beat another along a size sweep.

Why: "is the GPU worth it?" and "do two threads help?" depend on the size of the
problem; a sweep answers with a size, named: "cpu-omp (2 thr) beats cpu-omp (1 thr)
from width 256", "cuda beats the best CPU from batch 64".

A sweep is a set of workloads that differ in exactly one size column and in nothing
else trained or timed (every other workload cell equal, the workload's name aside):
  samples  n_samples
  batch    batch_size
  width    layers: the same depth and output size (and, for an MLP, input size);
           the size is the widest hidden layer (an MLP) or the input width (linear).
Within a sweep a series is one setup (backend, world size, devices, threads,
precision, knobs) of one run; its points are median samples/s per size. The oracle
(float64 reference) is a correctness check, not a contender, and is left out.

The crossing of series A and B, measured at common sizes x1 < ... < xk with
r_i = samples/s of A / samples/s of B at x_i: the order flips between consecutive
sizes x_i, x_{i+1} when r_i and r_{i+1} lie on opposite sides of 1 (a size where they
tie is skipped). The named point is x_{i+1}, the first measured size in the new order
("A beats B from x_{i+1}"); the crossing itself is estimated by interpolating log r
linearly in log x: x* = exp(ln x_i + (ln x_{i+1} − ln x_i) · ln r_i / (ln r_i − ln r_{i+1})).
Pairs: every two series of a sweep, and, where a sweep has two or more CPU series,
each GPU series against the best CPU (the CPU series with the highest samples/s at
each size).
A size where a series failed (every repetition: derive's Workload.failed) is no point
of it, and nothing is interpolated across it: when the order flips between two sizes
with a failed one between them, the statement names the failure and gives no crossing
("A beats B at 512, not at 128; A failed at 256: no crossing estimated"), the plot
breaks the line there and marks the failure. For the best CPU, a size where any CPU
series failed counts as failed (the best of the others is not the best CPU).

sweeps(summary) -> [Sweep]; section_html(summary, figure); figures(summary) -> dict.
"""

import math
from dataclasses import dataclass, field
from html import escape as esc

from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, NullLocator

import fmt
import plots
from derive import _order_key
from load import CONFIG_COLUMNS, WORKLOAD_COLUMNS
from tables import _table

AXES = [("samples", "n_samples"), ("batch", "batch_size"), ("width", "layers")]
SETUP_COLUMNS = [c for c in CONFIG_COLUMNS if c not in WORKLOAD_COLUMNS]
NO_CROSSOVER = "no crossover in the measured range"
BEST_CPU = "the best CPU"

FORMULAS = [
    ("crossover (named point)", "along a sweep of one size column (n_samples, batch_size, or "
                                "the widest hidden layer), for series A and B with r = samples/s "
                                "of A / samples/s of B at each measured size: where r crosses 1 "
                                "between consecutive sizes x_i and x_{i+1}, \"A beats B from "
                                "x_{i+1}\" (the first measured size in the new order)"),
    ("crossover (interpolated)", "x* = exp(ln x_i + (ln x_{i+1} − ln x_i) · ln r_i / "
                                 "(ln r_i − ln r_{i+1})): log r linear in log x between the two "
                                 "sizes"),
    ("best CPU", "at each size, the CPU series (not the oracle) with the highest median "
                 "samples/s"),
]


def _layers(cell):
    """'64,256,10' -> [64, 256, 10]; None for a cell that is not such a list (a hand-edited
    results.csv; a failed row's empty cell)."""
    try:
        ls = [int(v) for v in str(cell).split(",")]
    except ValueError:
        return None
    return ls if ls and all(v > 0 for v in ls) else None


def width_of(model, layers):
    """The width a layers cell sweeps: the widest hidden layer of an MLP, the input of a
    linear model."""
    ls = _layers(layers)
    if ls is None:
        return None
    return max(ls[1:-1]) if model == "mlp" and len(ls) > 2 else ls[0]


def _width_shape(model, layers):
    """What must stay equal along a width sweep: depth, output, and an MLP's input."""
    ls = _layers(layers)
    return (len(ls), ls[-1], ls[0] if model == "mlp" else None)


def size_of(axis, cells):
    if axis == "width":
        return width_of(cells.get("model"), cells.get("layers"))
    return cells.get(dict(AXES)[axis])


def _sweep_key(axis, g):
    col = dict(AXES)[axis]
    key = tuple((c, g.config.get(c)) for c in WORKLOAD_COLUMNS if c not in ("workload", col))
    if axis == "width":
        key += (("shape", _width_shape(g.config.get("model"), g.config.get("layers"))),)
    return (g.run_id,) + key


@dataclass
class Crossing:
    faster: str             # the series that leads from `at` on
    slower: str
    at: float               # the first measured size in the new order
    between: tuple          # (x_i, x_{i+1})
    estimate: float         # log-log interpolated crossing; None across a failed size
    failed: tuple = ()      # ((series, size), ...) that failed between x_i and x_{i+1}

    def text(self, axis):
        lo, hi = size_text(self.between[0]), size_text(self.between[1])
        if self.failed:
            return (f"{self.faster} beats {self.slower} at {axis} {hi}, not at {lo}; "
                    f"{_failed_text(self.failed, axis)} between them: no crossing estimated")
        return (f"{self.faster} beats {self.slower} from {axis} {size_text(self.at)} "
                f"(crossing ≈ {size_text(self.estimate, 3)}, log-log interpolation between "
                f"{lo} and {hi})")


def _failed_text(failed, axis):
    """'cuda failed at width 256; the best CPU failed at width 512'."""
    return "; ".join(f"{name} failed at {axis} {size_text(x)}" for name, x in failed)


@dataclass
class Pair:
    a: str
    b: str
    crossings: list         # Crossing, in size order
    leader: str = ""        # without crossings: who is faster throughout ("" when tied)
    sizes: tuple = ()       # the common sizes compared
    axis_name: str = ""
    failed: tuple = ()      # ((series, size), ...) failed inside the compared range

    def text(self, axis):
        if self.crossings:
            return "; ".join(c.text(axis) for c in self.crossings)
        lo, hi = size_text(self.sizes[0]), size_text(self.sizes[-1])
        # With a failure inside the range, "every size" would include the failed one.
        every = "every measured size" if self.failed else "every size"
        lead = f": {self.leader} faster at {every}" if self.leader else ""
        gaps = f"; {_failed_text(self.failed, axis)}" if self.failed else ""
        return f"{self.a} vs {self.b}: {NO_CROSSOVER} ({self.axis_name} {lo}–{hi}){lead}{gaps}"


@dataclass
class Sweep:
    axis: str
    column: str
    sizes: list
    workloads: list
    series: dict = field(default_factory=dict)   # label -> {size: Group}
    pairs: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)   # label -> {size: Group that failed there}


def size_text(v, digits=None):
    if digits is not None:
        v = float(f"{v:.{digits}g}")
    return f"{v:,.0f}".replace(",", "") if float(v).is_integer() else f"{v:g}"


def crossings(points_a, points_b, name_a, name_b, failed_a=(), failed_b=()):
    """points: {size: samples/s}; failed_*: sizes where that series failed. -> (list of
    Crossing, common sizes, leader without a flip, ((name, size), ...) failed inside the
    common range). A flip across a failed size is a Crossing without an estimate."""
    fails = sorted([(x, name_a) for x in failed_a] + [(x, name_b) for x in failed_b])
    failed_at = {x for x, _ in fails}
    sizes = sorted((set(points_a) & set(points_b)) - failed_at)
    signed = [(x, math.log(points_a[x] / points_b[x])) for x in sizes
              if points_a[x] > 0 and points_b[x] > 0]
    signed = [(x, lr) for x, lr in signed if lr != 0]   # ties belong to neither order
    out = []
    for (x0, l0), (x1, l1) in zip(signed, signed[1:]):
        if (l0 > 0) == (l1 > 0):
            continue
        faster, slower = (name_a, name_b) if l1 > 0 else (name_b, name_a)
        gap = tuple((name, x) for x, name in fails if x0 < x < x1)
        if gap:   # the order may have flipped anywhere: at the failed size or either side
            out.append(Crossing(faster, slower, x1, (x0, x1), None, gap))
            continue
        est = math.exp(math.log(x0) + (math.log(x1) - math.log(x0)) * l0 / (l0 - l1))
        out.append(Crossing(faster, slower, x1, (x0, x1), est))
    leader = ""
    if not out and signed:
        leader = name_a if signed[0][1] > 0 else name_b
    inside = tuple((name, x) for x, name in fails if sizes and sizes[0] < x < sizes[-1])
    return out, sizes, leader, inside


def _pairs(sweep, axis):
    labels = list(sweep.series)
    pts = {lab: {x: g.med_sps for x, g in s.items()} for lab, s in sweep.series.items()}
    failed = {lab: set(sweep.failed.get(lab, ())) for lab in labels}
    pairs = []
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            cs, sizes, leader, gaps = crossings(pts[a], pts[b], a, b, failed[a], failed[b])
            if len(sizes) >= 2:
                pairs.append(Pair(a, b, cs, leader, tuple(sizes), axis, gaps))
    kind = {lab: next(iter(s.values())).traits.get("device_kind") for lab, s in sweep.series.items()}
    cpu = [lab for lab in labels if kind[lab] == "cpu"]
    if len(cpu) >= 2:
        best = {}
        for x in sweep.sizes:
            vals = [pts[lab][x] for lab in cpu if x in pts[lab]]
            if vals:
                best[x] = max(vals)
        # Every CPU configuration that failed, not only those with a series of points.
        best_failed = {x for lab, s in sweep.failed.items()
                       if next(iter(s.values())).device_kind == "cpu" for x in s}
        for g_lab in (lab for lab in labels if kind[lab] == "gpu"):
            cs, sizes, leader, gaps = crossings(pts[g_lab], best, g_lab, BEST_CPU,
                                                failed[g_lab], best_failed)
            if len(sizes) >= 2:
                pairs.append(Pair(g_lab, BEST_CPU, cs, leader, tuple(sizes), axis, gaps))
    return pairs


def sweeps(summary):
    # Failed configurations (no rows) take part: a failed size is still a size of the sweep.
    # A configuration without a size (an empty or unreadable cell) is on no axis.
    groups = [g for w in summary.workloads for g in w.groups + w.failed]
    out = []
    for axis, col in AXES:
        parts = {}
        for g in groups:
            if size_of(axis, g.config) is not None:
                parts.setdefault(_sweep_key(axis, g), []).append(g)
        for gs in parts.values():
            # One size per distinct workload (an MLP's two shapes of one width are no sweep).
            size_of_workload = {}
            for g in gs:
                size_of_workload.setdefault(g.config.get(col), size_of(axis, g.config))
            sizes = sorted(set(size_of_workload.values()))
            if len(sizes) < 2 or len(sizes) != len(size_of_workload):
                continue
            multi_host = summary.multi_host
            sw = Sweep(axis, col, sizes, list(dict.fromkeys(g.workload for g in
                                                            sorted(gs, key=lambda g: size_of(axis, g.config)))))
            by_setup = {}
            for g in sorted(gs, key=_order_key):
                if g.oracle:
                    continue
                key = (g.run_id,) + tuple(g.config.get(c) for c in SETUP_COLUMNS)
                by_setup.setdefault(key, []).append(g)
            for members in by_setup.values():
                members = sorted(members, key=lambda g: size_of(axis, g.config))
                label = members[0].label(multi_host)
                while label in sw.series or label in sw.failed:
                    label += "'"
                ran = {size_of(axis, g.config): g for g in members if g.rows}
                if ran:
                    sw.series[label] = ran
                fails = {size_of(axis, g.config): g for g in members if not g.rows}
                if fails:
                    sw.failed[label] = fails
            if not sw.series:
                continue
            sw.pairs = _pairs(sw, axis)
            out.append(sw)
    return out


# ---- HTML and figures ------------------------------------------------------------------

def _cell(sw, lab, x):
    s, failed = sw.series.get(lab, {}), sw.failed.get(lab, {})
    if x in s:
        return fmt.sps(s[x].med_sps), "num"
    if x in failed:
        return f"failed: {esc(failed[x].why_failed())}", "bad wrap"
    return "–", "num"


def table(sw):
    head = ["configuration"] + [f"{sw.axis} {size_text(x)} samples/s" for x in sw.sizes]
    labels = list(sw.series) + [lab for lab in sw.failed if lab not in sw.series]
    rows = [[(esc(lab), "")] + [_cell(sw, lab, x) for x in sw.sizes] for lab in labels]
    return _table(head, rows, "results")


def plot(sw):
    """samples/s vs size on log-log axes, one line per series; a dotted vertical line at
    every interpolated crossing."""
    fig = Figure(figsize=(7.5, 4.6))
    ax = fig.add_subplot(1, 1, 1)
    div, unit = plots.sps_unit([g.med_sps for s in sw.series.values() for g in s.values()])
    for i, (lab, s) in enumerate(sw.series.items()):
        xs, ys = plots._with_gaps([(x, g.med_sps / div) for x, g in s.items()], sw.failed.get(lab, {}))
        ax.plot(xs, ys, marker="os^Dv<>"[i % 7],
                linestyle=plots.LINESTYLES[i % len(plots.LINESTYLES)],
                color=plots.backend_color(s[min(s)]), label=lab)
    for lab, failed in sw.failed.items():
        for x in failed:
            plots.mark_failed(ax, x, f"{lab} {plots.FAILED_TEXT}")
    for p in sw.pairs:
        for c in p.crossings:
            if c.estimate is None:   # a flip across a failed size: no crossing to draw
                continue
            ax.axvline(c.estimate, color="#888888", linestyle=":", linewidth=1)
            ax.annotate(f"≈{size_text(c.estimate, 3)}", (c.estimate, 1), xycoords=("data", "axes fraction"),
                        xytext=(2, -12), textcoords="offset points", fontsize="x-small", color="#555555")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sw.sizes, [size_text(x) for x in sw.sizes])
    ax.xaxis.set_minor_locator(NullLocator())   # the sizes are the ticks
    # Not minorticks_off(): on a samples/s axis within one decade the ticks between the
    # decades are the only ones, and they carry the labels.
    plots.plain_log_ticks(ax.yaxis, EngFormatter())
    ax.set_xlabel(f"{sw.axis} ({sw.column}{', widest hidden layer' if sw.axis == 'width' else ''})")
    ax.set_ylabel(f"{unit} (median), log scale")
    ax.set_title(f"samples/s vs {sw.axis}: {', '.join(sw.workloads)}", fontsize="medium")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return plots._png(fig)


def statements(sw):
    """The sentences the section prints: crossings first, then pairs without one."""
    flips = [c.text(sw.axis) for p in sw.pairs for c in p.crossings]
    flat = [p.text(sw.axis) for p in sw.pairs if not p.crossings]
    return flips, flat


def section_html(summary, figure):
    sws = sweeps(summary)
    if not sws:
        return ""
    out = ['<section id="crossovers"><h2>Crossovers</h2>',
           '<p class="meta">Workloads that differ in exactly one size (rows, batch or width) form '
           "a sweep. Between two consecutive measured sizes where the faster of two "
           "configurations changes, the later size is named (\"A beats B from …\") and the "
           "crossing is estimated by log-log interpolation of their samples/s ratio.</p>"]
    for sw in sws:
        out.append(f"<h3>{esc(sw.axis)} sweep <span class=\"muted\">({esc(', '.join(sw.workloads))})</span></h3>")
        flips, flat = statements(sw)
        if not flips:
            out.append(f"<p><b>{esc(NO_CROSSOVER.capitalize())}</b> ({esc(sw.axis)} "
                       f"{size_text(sw.sizes[0])}–{size_text(sw.sizes[-1])}).</p>")
        items = [f"<li><b>{esc(t)}</b></li>" for t in flips] + [f"<li>{esc(t)}</li>" for t in flat]
        if items:
            out.append('<ul class="notes">' + "".join(items) + "</ul>")
        out.append(table(sw))
        out.append(figure(plot(sw), f"samples/s vs {sw.axis} ({', '.join(sw.workloads)}), log-log"))
    out.append("</section>")
    return "".join(out)


def figures(summary):
    """{"crossovers": [...]} for summary.json."""
    out = []
    for sw in sweeps(summary):
        out.append({
            "axis": sw.axis, "column": sw.column, "sizes": sw.sizes, "workloads": sw.workloads,
            "series": [{"label": lab, "samples_per_s": {size_text(x): g.med_sps for x, g in s.items()}}
                       for lab, s in sw.series.items()],
            "failed": [{"label": lab, "sizes": sorted(f)} for lab, f in sw.failed.items()],
            "crossings": [{"faster": c.faster, "slower": c.slower, "from": c.at,
                           "between": list(c.between), "interpolated": c.estimate,
                           "failed_between": [{"label": n, "size": x} for n, x in c.failed]}
                          for p in sw.pairs for c in p.crossings],
            "no_crossover": [{"a": p.a, "b": p.b, "leader": p.leader, "sizes": list(p.sizes),
                              "failed_between": [{"label": n, "size": x} for n, x in p.failed]}
                             for p in sw.pairs if not p.crossings],
        })
    return {"crossovers": out}
