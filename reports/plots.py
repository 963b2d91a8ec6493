"""Matplotlib (Agg) figures for one workload, returned as base64 PNG strings.

Why: the report must be one self-contained file, so every figure is rendered
off-screen and embedded as a data URI. Each plot has a title and units on its
axes; a backend keeps its colour across all plots of the report. Figures are
built with the object API (Figure + FigureCanvasAgg), never pyplot's global
state, so rendering is repeatable and safe to call many times.

Plots: throughput (median samples/s per configuration, min–max whiskers);
scaling (samples/s vs world size with the ideal line) when a workload has more
than one world size; stacked per-phase seconds per epoch; loss curves overlaid (coinciding ones
drawn once, integer epoch ticks, a flat loss on an axis from 0);
weak-scaling efficiency vs N per weak-scaling family, with the 100% line.
A configuration that failed in every repetition (derive: Workload.failed) is drawn
where its point or bar would be: a red ✗ on the axis, marked "failed", never left out
(its absence would read as "not run"); a line never joins points across it.
"""

import base64
import io
import math

import matplotlib

matplotlib.use("Agg")
# Titles and labels carry the user's names (a workload may be called "price$5"): plain
# text, never mathtext, which raises on an unbalanced "$" (no report at all) and
# typesets a balanced pair.
matplotlib.rcParams["text.parse_math"] = False
from matplotlib.artist import Artist  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import EngFormatter, LogFormatter, MaxNLocator  # noqa: E402

import derive  # noqa: E402
import loss_curves  # noqa: E402
from derive import weak_series_label  # noqa: E402

PHASES = ["transfer", "forward", "backward", "comm", "optimizer", "other"]
PHASE_COLORS = {"transfer": "#8c564b", "forward": "#1f77b4", "backward": "#ff7f0e",
                "comm": "#d62728", "optimizer": "#2ca02c", "other": "#bbbbbb"}
PALETTE = ["#4d4d4d", "#1f77b4", "#17becf", "#2ca02c", "#ff7f0e", "#d62728",
           "#9467bd", "#8c564b", "#e377c2", "#bcbd22"]
LINESTYLES = ["-", "--", "-.", ":"]
LOG_RATIO = 30.0   # a log axis when the largest value is this many times the smallest
DPI = 100
# Above this, samples/s are plotted in units of a power of ten (sps_unit): matplotlib's
# tick arithmetic overflows near the largest float (1.8e308; a hand-edited 1e308 row).
HUGE_SPS = 1e200
FAILED_COLOR = "#b00020"
FAILED_TEXT = "failed"


class PlainLogFormatter(LogFormatter):
    """Labels the ticks of a log axis that matplotlib's LogFormatter picks: the decades
    and, where the axis spans about one decade or less (its minor_thresholds), the ticks
    between them, all of them below 0.4 decades; each written by `text` rather than
    LogFormatter's "%1.0e", which writes 3.1e8 and 3.2e8 alike as "3e+08".

    Over one to two decades LogFormatter labels the decades alone, and one decade may be
    all that is in view (data from 15 to 400 showed "100", one number): the minor
    formatter then labels the 2s and 5s too, which every stretch of a decade or more holds
    three of. Not its 2, 3, 4 and 6, as within a decade: over two, they overlapped."""

    TWO_DECADES = 2.0   # wider views hold two decades, labelled

    def __init__(self, text, minor=False):
        super().__init__(labelOnlyBase=not minor)
        self._text = text
        self._one_two_five = False

    def set_locs(self, locs=None):
        super().set_locs(locs)
        lo, hi = sorted(self.axis.get_view_interval()) if self.axis else (0.0, 0.0)
        # Not log10(hi / lo): near the largest float the quotient overflows (a 1e308 row).
        decades = math.log10(hi) - math.log10(lo) if lo > 0 and self._base == 10 else 0.0
        self._one_two_five = not self.labelOnlyBase and self.minor_thresholds[0] < decades <= self.TWO_DECADES

    def __call__(self, x, pos=None):
        if self._one_two_five and x > 0:
            mantissa = x / 10.0 ** math.floor(math.log10(x) + 1e-9)   # 1e-9: 1000 is 10^3, not 9.99 × 10^2
            # The decades (mantissa 1) are the major formatter's to label.
            return self._text(x) if any(math.isclose(mantissa, m, rel_tol=1e-6) for m in (2, 5)) else ""
        return super().__call__(x, pos)

    def _num_to_string(self, x, vmin, vmax):
        return self._text(x)


def _plain_number(x):
    return f"{x:.3g}"


def plain_log_ticks(axis, formatter=None):
    """Tick labels of a log axis without mathtext, which is off (above): the default
    LogFormatterSciNotation writes "$\\mathdefault{10^{4}}$", shown as it is. Labels as
    `formatter` writes them (default "0.001", "0.03", "1", "1e+05"): the decades, and on
    an axis spanning a decade or less the ticks between too, which had none, so such an
    axis (samples/s from 150 k to 400 k) showed no number at all; up to two decades, the
    2s and 5s (PlainLogFormatter)."""
    text = formatter or _plain_number
    axis.set_major_formatter(PlainLogFormatter(text))
    axis.set_minor_formatter(PlainLogFormatter(text, minor=True))


def sps_unit(values):
    """(divisor, axis unit) for plotting samples/s: (1, "samples/s") for any real run; for
    values above HUGE_SPS a power of ten that brings the largest to about 1e12, named in
    the unit ("samples/s × 1e296"). Plotted as they are, values near 1.8e308 overflow in
    matplotlib (a linear axis's tick steps reach 20× the range's scale, a log axis's
    margins pass 1e308) and print RuntimeWarnings; an ideal line base × n becomes inf."""
    top = max((v for v in values if math.isfinite(v)), default=0.0)
    if top <= HUGE_SPS:
        return 1.0, "samples/s"
    exp = math.floor(math.log10(top)) - 12
    return 10.0 ** exp, f"samples/s × 1e{exp}"


def backend_color(g):
    """The colour of g's backend: the same in every plot of the report (derive sets g.color)."""
    return PALETTE[g.color % len(PALETTE)]


def _png(fig):
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _bar_figure(n_bars):
    fig = Figure(figsize=(8.0, 1.4 + 0.38 * n_bars))
    return fig, fig.add_subplot(1, 1, 1)


class _FailedLabels(Artist):
    """Stacks an axes' mark_failed labels: from left to right, each goes to the lowest row
    above the axis where it overlaps none placed before it. Several configurations failing
    at one size (cuda-dp ×2 and cuda-ddp ×2), or at neighbouring ones, wrote their labels
    over each other. Done as the axes are drawn, when the limits and scale (set after the
    marks) decide where each label falls and how wide it is; draws nothing itself, drawn
    before the labels (a lower zorder than texts')."""

    ABOVE_PT = 6.0    # the first row's offset above the axis (and the ✗ marker)
    BETWEEN_PT = 2.0  # between two rows

    def __init__(self):
        super().__init__()
        self.labels = []
        self.set_zorder(0)
        self.set_in_layout(False)

    def draw(self, renderer):
        placed = []
        for ann in sorted(self.labels, key=lambda a: a.xy[0]):
            ann.xyann = (5.0, self.ABOVE_PT)
            box = ann.get_window_extent(renderer)
            row_pt = box.height / renderer.points_to_pixels(1.0) + self.BETWEEN_PT
            while any(box.overlaps(b) for b in placed):
                ann.xyann = (5.0, ann.xyann[1] + row_pt)
                box = ann.get_window_extent(renderer)
            placed.append(box)


def mark_failed(ax, x, text=FAILED_TEXT):
    """A red ✗ on the x axis at x, labelled `text`: a configuration that failed, at the
    size where its point would be (it has no y). Not clipped, so it shows whole; labels
    that would overlap are stacked (_FailedLabels)."""
    ax.plot([x], [0], marker="X", markersize=9, color=FAILED_COLOR, linestyle="none",
            clip_on=False, zorder=5, transform=ax.get_xaxis_transform())
    ann = ax.annotate(text, (x, 0), xycoords=("data", "axes fraction"), xytext=(5, _FailedLabels.ABOVE_PT),
                      textcoords="offset points", fontsize="small", color=FAILED_COLOR,
                      annotation_clip=False)
    stack = next((a for a in ax.get_children() if isinstance(a, _FailedLabels)), None)
    if stack is None:
        stack = ax.add_artist(_FailedLabels())
    stack.labels.append(ann)


def mark_failed_row(ax, y, why):
    """'✗ failed: <why>' on row y of a horizontal bar chart, where its bar would be: a
    configuration that failed keeps its row. x in axes fraction: readable on a linear or
    a log axis alike."""
    ax.text(0.01, y, f"✗ {FAILED_TEXT}: {why}", transform=ax.get_yaxis_transform(),
            va="center", color=FAILED_COLOR, fontsize="small")


def whiskers(xs, by_x, div=1.0):
    """errorbar's yerr for the points at xs: median - min and max - median of the Group at
    each x in by_x, over div (sps_unit); 0 at the gap points _with_gaps puts between them."""
    return [[(by_x[x].med_sps - by_x[x].min_sps) / div if x in by_x else 0.0 for x in xs],
            [(by_x[x].max_sps - by_x[x].med_sps) / div if x in by_x else 0.0 for x in xs]]


def _with_gaps(points, failed_at):
    """(xs, ys) sorted by x with NaN at each x in failed_at: matplotlib breaks a line at
    NaN, so no segment bridges a failed point."""
    pts = dict(points)
    pts.update({x: float("nan") for x in failed_at if x not in pts})
    xs = sorted(pts)
    return xs, [pts[x] for x in xs]


def throughput_plot(w):
    fig = throughput_figure(w)
    return None if fig is None else _png(fig)


def throughput_figure(w):
    """Median samples/s per configuration with min–max whiskers; a configuration that
    failed keeps its row, with "failed: <why>" where its bar would be. The Figure itself
    (throughput_plot makes the PNG), so tests can read its texts."""
    gs = w.groups
    if not gs:
        return None
    fig, ax = _bar_figure(len(gs) + len(w.failed))
    ys = list(range(len(gs) + len(w.failed)))[::-1]
    div, unit = sps_unit([g.max_sps for g in gs])
    med = [g.med_sps / div for g in gs]
    err = [[(g.med_sps - g.min_sps) / div for g in gs], [(g.max_sps - g.med_sps) / div for g in gs]]
    ax.barh(ys[:len(gs)], med, xerr=err, color=[backend_color(g) for g in gs],
            capsize=3, error_kw={"elinewidth": 1})
    for y, g in zip(ys[len(gs):], w.failed):
        mark_failed_row(ax, y, g.why_failed())
    ax.set_yticks(ys, [g.label(w.multi_host) for g in gs + w.failed])
    ax.set_ylim(-0.6, len(ys) - 0.4)   # the rows without a bar too (autoscaling skips them)
    log = max(med) / min(med) > LOG_RATIO
    if log:
        ax.set_xscale("log")
        plain_log_ticks(ax.xaxis, EngFormatter())
    else:
        ax.xaxis.set_major_formatter(EngFormatter())
    ax.set_xlabel(f"{unit} (median, whiskers min–max)" + (", log scale" if log else ""))
    ax.set_title(f"{w.name}: training throughput")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _scaling_families(w):
    """[(base Group, [Groups scaled against it], [failed Groups that would be])]: cuda with
    cuda-dp/cuda-ddp, cpu-ddp alone; a panel also for a base whose every member failed."""
    fams = {}
    for g in w.groups:
        if g.efficiency_base is not None:
            fams.setdefault(id(g.efficiency_base), (g.efficiency_base, [], []))[1].append(g)
    for g in w.failed:
        base = derive.scaling_base_of(g, w.groups) if (g.world_size or 1) > 1 else None
        if base is not None:
            fams.setdefault(id(base), (base, [], []))[2].append(g)
    return list(fams.values())


def scaling_plot(w):
    """samples/s vs world size, one panel per world-size-1 base, dotted ideal line base × n.

    Panels keep a linear axis from 0 (how far from ideal reads directly) and
    separate families whose throughputs differ by orders of magnitude (CPU, GPU).
    """
    fams = _scaling_families(w)
    if not fams:
        return None
    cols = min(2, len(fams))
    rows = (len(fams) + cols - 1) // cols
    fig = Figure(figsize=(5.2 * cols, 4.2 * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, (base, members, failed) in zip(axes, fams):
        # One line per backend and setting (cuda-dp faithful and persistent apart).
        line = lambda g: (g.backend + (f" {g.settings}" if g.settings else ""))  # noqa: E731
        lines = {line(base): [base]}
        for g in members:
            lines.setdefault(line(g), []).append(g)
        for g in w.groups:   # a member backend's own world-size-1 row (cuda-dp ×1)
            if (line(g) in lines and line(g) != line(base) and g.world_size == 1
                    and g.origin == base.origin and g not in lines[line(g)]):
                lines[line(g)].append(g)
        sizes = sorted({g.world_size for gs in lines.values() for g in gs}
                       | {g.world_size for g in failed})
        div, unit = sps_unit([g.max_sps for gs in lines.values() for g in gs])
        for i, (name, gs) in enumerate(lines.items()):
            gaps = [g.world_size for g in failed if line(g) == name]
            xs, ys = _with_gaps([(g.world_size, g.med_sps / div) for g in gs], gaps)
            err = whiskers(xs, {g.world_size: g for g in gs}, div)
            ax.errorbar(xs, ys, yerr=err, marker="os^D"[i % 4], capsize=3,
                        linestyle=LINESTYLES[i % 2], color=backend_color(gs[0]), label=name)
        for g in failed:
            mark_failed(ax, g.world_size, f"{line(g)} ×{g.world_size} {FAILED_TEXT}")
        ax.plot(sizes, [base.med_sps / div * n for n in sizes], color="#555555", linestyle=":",
                label="ideal (base × n)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("world size (GPUs or ranks)")
        ax.set_ylabel(f"{unit} (median)")
        ax.yaxis.set_major_formatter(EngFormatter())
        ax.set_ylim(bottom=0)
        ax.set_title(f"base: {base.label(w.multi_host)}", fontsize="medium")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    for ax in axes[len(fams):]:
        ax.set_visible(False)
    fig.suptitle(f"{w.name}: scaling")
    fig.tight_layout()
    return _png(fig)


def weak_plot(fam):
    """Weak-scaling efficiency (%) vs N, one line per (machine, backend, threads), ideal 100%.

    Linear axis from 0 so the distance below 100% reads directly; log2 N ticks.
    """
    lines = {}
    for g in fam.members:
        if g.weak_efficiency is not None:
            lines.setdefault(weak_series_label(g, fam.multi_host), []).append(g)
    if not lines:
        return None
    fig = Figure(figsize=(7.0, 4.4))
    ax = fig.add_subplot(1, 1, 1)
    sizes = sorted({g.weak_n for gs in lines.values() for g in gs} | {g.weak_n for g in fam.failed})
    top = 100.0
    for i, (label, gs) in enumerate(lines.items()):
        gaps = [g.weak_n for g in fam.failed if weak_series_label(g, fam.multi_host) == label]
        xs, effs = _with_gaps([(g.weak_n, 100.0 * g.weak_efficiency) for g in gs], gaps)
        top = max(top, *(e for e in effs if e == e))   # NaN != NaN: the gaps
        ax.plot(xs, effs, marker="os^D"[i % 4],
                linestyle=LINESTYLES[i % 2], color=backend_color(gs[0]), label=label)
    for g in fam.failed:
        mark_failed(ax, g.weak_n, f"{weak_series_label(g, fam.multi_host)} N={g.weak_n} {FAILED_TEXT}")
    ax.axhline(100.0, color="#555555", linestyle=":", label="ideal (100%)")
    if len(sizes) > 1:
        ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("GPUs / ranks (N)")
    ax.set_ylabel("efficiency (%)")
    ax.set_ylim(0, top * 1.08)
    ax.set_title(f"{fam.stem}-xN: weak-scaling efficiency")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower left")
    return _png(fig)


def phases_plot(w):
    """Stacked seconds per epoch (left) and the same stacks as shares of the epoch (right).

    Stacks cannot use a log axis, so when CPU and GPU rows differ by orders of
    magnitude the right panel keeps the small bars readable.
    """
    gs = w.groups
    if not gs:
        return None
    fig = Figure(figsize=(10.0, 1.6 + 0.38 * len(gs)))
    ax, ax_share = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 2]})
    ys = list(range(len(gs)))[::-1]
    totals = [sum(g.phases.get(p, 0.0) for p in PHASES) for g in gs]
    left = [0.0] * len(gs)
    left_share = [0.0] * len(gs)
    for p in PHASES:
        vals = [g.phases.get(p, 0.0) for g in gs]
        if not any(vals):
            continue
        share = [100.0 * v / t if t > 0 else 0.0 for v, t in zip(vals, totals)]
        ax.barh(ys, vals, left=left, color=PHASE_COLORS[p], label=p)
        ax_share.barh(ys, share, left=left_share, color=PHASE_COLORS[p])
        left = [a + b for a, b in zip(left, vals)]
        left_share = [a + b for a, b in zip(left_share, share)]
    ax.set_yticks(ys, [g.label(w.multi_host) for g in gs])
    ax.xaxis.set_major_formatter(EngFormatter(unit="s"))
    ax.set_xlabel("time per epoch (median)")
    ax_share.set_xlabel("share of the stacked time (%)")
    ax_share.set_xlim(0, 100)
    ax.set_title(f"{w.name}: time per phase")
    for a in (ax, ax_share):
        a.grid(axis="x", alpha=0.3)
    fig.legend(fontsize="small", ncol=6, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout()
    return _png(fig)


def _cluster_label(c, multi_host):
    """A legend entry: one configuration, or coinciding ones two per line, '(coincide)'."""
    names = [g.label(multi_host) for g in c]
    if len(names) == 1:
        return names[0]
    rows = [", ".join(names[i:i + 2]) for i in range(0, len(names), 2)]
    return ",\n".join(rows) + "\n(coincide: one line)"


def loss_plot(w):
    fig = loss_figure(w)
    return None if fig is None else _png(fig)


def loss_figure(w):
    """Median training loss per epoch; coinciding curves (loss_curves.clusters) drawn once
    with every name in the legend; integer epoch ticks; a flat loss keeps 0 on the y-axis.
    The Figure itself (loss_plot makes the PNG), so tests can read its axes."""
    gs = [g for g in w.groups if g.curve]
    if not gs:
        return None
    fig = Figure(figsize=(8.0, 4.8))
    ax = fig.add_subplot(1, 1, 1)
    all_losses = [v for g in gs for _, v in g.curve]
    for i, c in enumerate(loss_curves.clusters(gs)):
        g = c[0]
        ax.plot([e for e, _ in g.curve], [v for _, v in g.curve], color=backend_color(g),
                linestyle=LINESTYLES[i % len(LINESTYLES)], marker="o", markersize=3,
                linewidth=2.5 if len(c) > 1 else 1.5, label=_cluster_label(c, w.multi_host))
    epochs = sorted({e for g in gs for e, _ in g.curve})
    if len(epochs) <= 12:
        ax.set_xticks(epochs)       # every epoch, whole numbers (also a lone epoch)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    flat = loss_curves.is_flat(gs)
    pos = [v for v in all_losses if v > 0]
    if flat and min(all_losses) >= 0:
        ax.set_ylim(0, max(all_losses) * 1.15)
        ax.text(0.5, 0.5, f"loss changed by less than {100 * loss_curves.FLAT_CHANGE:g}% "
                "over training", transform=ax.transAxes, ha="center", color="#8a5a00")
    elif pos and len(pos) == len(all_losses) and max(pos) / min(pos) > 10:
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss (mean over the epoch's steps)")
    ax.set_title(f"{w.name}: training loss per epoch (all backends overlaid)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig
