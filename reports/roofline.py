"""Roofline figures, one per device: arithmetic intensity (FLOP/byte) on x, GFLOP/s on y,
log-log, the measured ceilings as lines and every configuration as a labelled point.

Why per device: a CPU and a GPU differ by orders of magnitude in both ceilings, and a
point only means something against the roof of the hardware it ran on. Rows on several
GPUs are drawn per GPU (achieved / GPUs) against one GPU's roof, so they share the panel
of their GPU model. Inputs come from efficiency.analyse(); nothing is recomputed here.
"""

from matplotlib.figure import Figure

from efficiency import gpu_ids
from plots import _png, backend_color, plain_log_ticks

MARKERS = "os^Dv<>p*h"


def _per_device(analysis):
    """{device: [(Workload, Group, Efficiency, divisor)]} for rows with a roofline."""
    out = {}
    for w, g, e in analysis:
        if e.device is None or e.roof_gflops is None:
            continue
        n = 1
        if g.traits.get("device_kind") == "gpu":
            n = len(gpu_ids(g.devices) or [1])
        out.setdefault(e.device, []).append((w, g, e, n))
    return out


def _ceiling_label(g, n):
    if g.traits.get("device_kind") == "gpu":
        return f"1 GPU, {g.precision}"
    t = (g.threads or 1) * (g.world_size or 1)
    return f"{t} thread{'s' if t != 1 else ''}"


def roofline_plot(device, entries):
    """One figure (base64 PNG) for one device's entries."""
    fig = Figure(figsize=(8.5, 5.6))
    ax = fig.add_subplot(1, 1, 1)
    roofs = {}   # (GFLOP/s, GB/s) -> the thread counts or precisions it is the ceiling of
    for _, g, e, n in entries:
        labels = roofs.setdefault((e.peak_gflops / n, e.peak_gbs / n), [])
        if _ceiling_label(g, n) not in labels:
            labels.append(_ceiling_label(g, n))
    roofs = {k: ", ".join(v) for k, v in roofs.items()}
    xs = [e.intensity for _, _, e, _ in entries] + [p / b for p, b in roofs]
    lo, hi = min(xs) / 4.0, max(xs) * 12.0   # room on the right for the last points' labels
    grid = [lo * (hi / lo) ** (i / 200.0) for i in range(201)]
    for i, ((peak, bw), label) in enumerate(sorted(roofs.items(), key=lambda kv: kv[0])):
        ax.plot(grid, [min(peak, x * bw) for x in grid], color="#444444",
                linestyle=["-", "--", "-.", ":"][i % 4], linewidth=1.2,
                label=f"measured ceiling ({label}): {peak:,.4g} GFLOP/s, {bw:,.4g} GB/s")
    ys = []
    for i, (w, g, e, n) in enumerate(entries):
        y = e.gflops / n
        ys.append(y)
        ax.scatter([e.intensity], [y], s=36, zorder=3, color=backend_color(g),
                   marker="x" if e.over else MARKERS[i % len(MARKERS)],
                   edgecolors="black" if not e.over else None, linewidths=0.5)
        text = f"{w.name}: {g.label()}" + (f" ÷{n} GPUs" if n > 1 else "")
        ax.annotate(text, (e.intensity, y), textcoords="offset points", xytext=(5, 4),
                    fontsize="x-small")
    top = max([p for p, _ in roofs] + ys)
    bottom = min(ys + [top]) / 10.0
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis)
    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom, top * 3.0)
    ax.set_xlabel("arithmetic intensity (FLOP/byte; model FLOPs / lower-bound bytes per sample)")
    ax.set_ylabel("achieved GFLOP/s (1e9 FLOP/s)" + (", per GPU" if any(n > 1 for *_, n in entries) else ""))
    ax.set_title(f"Roofline: {device}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="x-small", loc="lower right")
    return _png(fig)


def roofline_plots(analysis):
    """[(device, base64 PNG)], one per device that has measured ceilings."""
    return [(device, roofline_plot(device, entries)) for device, entries in _per_device(analysis).items()]
