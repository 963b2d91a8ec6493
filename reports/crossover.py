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

sweeps(summary) -> [Sweep]; section_html(summary, figure); figures(summary) -> dict.
"""

import math
from dataclasses import dataclass, field
from html import escape as esc

from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter

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
    return [int(v) for v in str(cell).split(",")]


def width_of(model, layers):
    """The width a layers cell sweeps: the widest hidden layer of an MLP, the input of a
    linear model."""
    ls = _layers(layers)
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
    estimate: float         # log-log interpolated crossing

    def text(self, axis):
        return (f"{self.faster} beats {self.slower} from {axis} {size_text(self.at)} "
                f"(crossing ≈ {size_text(self.estimate, 3)}, log-log interpolation between "
                f"{size_text(self.between[0])} and {size_text(self.between[1])})")


@dataclass
class Pair:
    a: str
    b: str
    crossings: list         # Crossing, in size order
    leader: str = ""        # without crossings: who is faster throughout ("" when tied)
    sizes: tuple = ()       # the common sizes compared
    axis_name: str = ""

    def text(self, axis):
        if self.crossings:
            return "; ".join(c.text(axis) for c in self.crossings)
        lo, hi = size_text(self.sizes[0]), size_text(self.sizes[-1])
        lead = f": {self.leader} faster at every size" if self.leader else ""
        return f"{self.a} vs {self.b}: {NO_CROSSOVER} ({self.axis_name} {lo}–{hi}){lead}"


@dataclass
class Sweep:
    axis: str
    column: str
    sizes: list
    workloads: list
    series: dict = field(default_factory=dict)   # label -> {size: Group}
    pairs: list = field(default_factory=list)


def size_text(v, digits=None):
    if digits is not None:
        v = float(f"{v:.{digits}g}")
    return f"{v:,.0f}".replace(",", "") if float(v).is_integer() else f"{v:g}"


def crossings(points_a, points_b, name_a, name_b):
    """points: {size: samples/s}. -> (list of Crossing, common sizes, leader without a flip)."""
    sizes = sorted(set(points_a) & set(points_b))
    signed = [(x, math.log(points_a[x] / points_b[x])) for x in sizes
              if points_a[x] > 0 and points_b[x] > 0]
    signed = [(x, lr) for x, lr in signed if lr != 0]   # ties belong to neither order
    out = []
    for (x0, l0), (x1, l1) in zip(signed, signed[1:]):
        if (l0 > 0) == (l1 > 0):
            continue
        est = math.exp(math.log(x0) + (math.log(x1) - math.log(x0)) * l0 / (l0 - l1))
        faster, slower = (name_a, name_b) if l1 > 0 else (name_b, name_a)
        out.append(Crossing(faster, slower, x1, (x0, x1), est))
    leader = ""
    if not out and signed:
        leader = name_a if signed[0][1] > 0 else name_b
    return out, sizes, leader


def _pairs(sweep, axis):
    labels = list(sweep.series)
    pts = {lab: {x: g.med_sps for x, g in s.items()} for lab, s in sweep.series.items()}
    pairs = []
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            cs, sizes, leader = crossings(pts[a], pts[b], a, b)
            if len(sizes) >= 2:
                pairs.append(Pair(a, b, cs, leader, tuple(sizes), axis))
    kind = {lab: next(iter(s.values())).traits.get("device_kind") for lab, s in sweep.series.items()}
    cpu = [lab for lab in labels if kind[lab] == "cpu"]
    if len(cpu) >= 2:
        best = {}
        for x in sweep.sizes:
            vals = [pts[lab][x] for lab in cpu if x in pts[lab]]
            if vals:
                best[x] = max(vals)
        for g_lab in (lab for lab in labels if kind[lab] == "gpu"):
            cs, sizes, leader = crossings(pts[g_lab], best, g_lab, BEST_CPU)
            if len(sizes) >= 2:
                pairs.append(Pair(g_lab, BEST_CPU, cs, leader, tuple(sizes), axis))
    return pairs


def sweeps(summary):
    groups = [g for w in summary.workloads for g in w.groups]
    out = []
    for axis, col in AXES:
        parts = {}
        for g in groups:
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
                while label in sw.series:
                    label += "'"
                sw.series[label] = {size_of(axis, g.config): g for g in members}
            if not sw.series:
                continue
            sw.pairs = _pairs(sw, axis)
            out.append(sw)
    return out


# ---- HTML and figures ------------------------------------------------------------------

def table(sw):
    head = ["configuration"] + [f"{sw.axis} {size_text(x)} samples/s" for x in sw.sizes]
    rows = [[(esc(lab), "")] + [(fmt.sps(s[x].med_sps) if x in s else "–", "num") for x in sw.sizes]
            for lab, s in sw.series.items()]
    return _table(head, rows, "results")


def plot(sw):
    """samples/s vs size on log-log axes, one line per series; a dotted vertical line at
    every interpolated crossing."""
    fig = Figure(figsize=(7.5, 4.6))
    ax = fig.add_subplot(1, 1, 1)
    for i, (lab, s) in enumerate(sw.series.items()):
        xs = sorted(s)
        ax.plot(xs, [s[x].med_sps for x in xs], marker="os^Dv<>"[i % 7],
                linestyle=plots.LINESTYLES[i % len(plots.LINESTYLES)],
                color=plots.backend_color(s[xs[0]]), label=lab)
    for p in sw.pairs:
        for c in p.crossings:
            ax.axvline(c.estimate, color="#888888", linestyle=":", linewidth=1)
            ax.annotate(f"≈{size_text(c.estimate, 3)}", (c.estimate, 1), xycoords=("data", "axes fraction"),
                        xytext=(2, -12), textcoords="offset points", fontsize="x-small", color="#555555")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sw.sizes, [size_text(x) for x in sw.sizes])
    ax.minorticks_off()
    ax.yaxis.set_major_formatter(EngFormatter())
    ax.set_xlabel(f"{sw.axis} ({sw.column}{', widest hidden layer' if sw.axis == 'width' else ''})")
    ax.set_ylabel("samples/s (median), log scale")
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
            "crossings": [{"faster": c.faster, "slower": c.slower, "from": c.at,
                           "between": list(c.between), "interpolated": c.estimate}
                          for p in sw.pairs for c in p.crossings],
            "no_crossover": [{"a": p.a, "b": p.b, "leader": p.leader, "sizes": list(p.sizes)}
                             for p in sw.pairs if not p.crossings],
        })
    return {"crossovers": out}
