"""Every text in the report's figures is plain: mathtext is off (a workload name with a
"$" raised, or was typeset), so no tick label may be left in TeX ("$\\mathdefault{10^{4}}$",
what matplotlib's default log formatter writes). Drawn from the fixture GPU run, whose
CPU and GPU rows put the throughput plot on a log axis."""

import pytest
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter

import fixture_data as fx
import plots
import roofline
from axes_text import tick_labels_in_view


def test_no_figure_text_is_left_in_tex(gpu_run, monkeypatch):
    figures = []
    real_png = plots._png

    def capture(fig):
        figures.append(fig)
        return real_png(fig)  # draws it: tick labels exist only after a draw
    monkeypatch.setattr(plots, "_png", capture)
    monkeypatch.setattr(roofline, "_png", capture)
    fx.render_html(gpu_run)
    assert figures
    logs, texts = 0, []
    for fig in figures:
        for ax in fig.get_axes():
            logs += (ax.get_xscale() == "log") + (ax.get_yscale() == "log")
            for axis in (ax.xaxis, ax.yaxis):
                texts += [t.get_text() for t in axis.get_ticklabels(which="both")]
            texts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
    assert logs > 0, "no log axis drawn: the fixture does not exercise log tick labels"
    tex = [t for t in texts if "$" in t or "mathdefault" in t]
    assert not tex, tex


def _drawn_log_axis(low, high, formatter=None):
    """A figure with a log y-axis over [low, high], labelled by plots.plain_log_ticks, drawn."""
    fig = Figure()
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([1, 2, 3], [low, (low * high) ** 0.5, high])
    ax.set_yscale("log")
    plots.plain_log_ticks(ax.yaxis, formatter)
    plots._png(fig)
    return ax.yaxis


def test_a_log_axis_within_one_decade_has_plain_labelled_ticks():
    """Data spanning less than a decade has no decade tick in view, and only decades were
    labelled: such an axis showed no number at all."""
    assert tick_labels_in_view(_drawn_log_axis(0.021, 0.058)) == ["0.02", "0.03", "0.04", "0.06"]
    assert tick_labels_in_view(_drawn_log_axis(1.5e6, 4e6, EngFormatter())) == ["2 M", "3 M", "4 M"]
    # Within a tenth of a decade the ticks are matplotlib's linear ones, each its own label.
    assert tick_labels_in_view(_drawn_log_axis(3.0e8, 3.3e8, EngFormatter())) == [
        "300 M", "305 M", "310 M", "315 M", "320 M", "325 M", "330 M"]
    # Over several decades only the decades, as before.
    assert tick_labels_in_view(_drawn_log_axis(2e-4, 0.5)) == ["0.001", "0.01", "0.1"]


def _drawn_log_x_axis(low, high, formatter, width):
    """A figure `width` inches wide with a log x-axis over [low, high], as _drawn_log_axis's y."""
    fig = Figure(figsize=(width, 3.0))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([low, (low * high) ** 0.5, high], [1, 2, 3])
    ax.set_xscale("log")
    plots.plain_log_ticks(ax.xaxis, formatter)
    plots._png(fig)
    return ax.xaxis


def _labels_in_view(axis):
    """The drawn axis's labelled ticks in view: their texts, and whether two neighbours overlap."""
    lo, hi = sorted(axis.get_view_interval())
    ticks = list(zip(axis.get_majorticklocs(), axis.get_majorticklabels())) + \
        list(zip(axis.get_minorticklocs(), axis.get_minorticklabels()))
    shown = [t for x, t in sorted(ticks, key=lambda p: p[0]) if lo <= x <= hi and t.get_text()]
    renderer = axis.figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in shown]
    return [t.get_text() for t in shown], any(a.overlaps(b) for a, b in zip(boxes, boxes[1:]))


@pytest.mark.parametrize("ratio", [1.21, 1.5, 3, 8, 10, 15, 30, 60, 99])
def test_a_log_axis_over_less_than_two_decades_has_two_labels_or_more(ratio):
    """Over one to two decades only the decades were labelled, and one may be all that is in
    view (data from 15 to 400 showed "100" alone). Wherever the data start within a decade:
    at least two labels, none repeated, none overlapping its neighbour, on a y-axis and on
    x-axes as wide as the report's (a scaling panel's 5.2 in, the throughput plot's 8 in)."""
    for start in range(5):
        low = 10 ** (2 + start / 5 + 0.013)
        for axis in (_drawn_log_axis(low, low * ratio), _drawn_log_x_axis(low, low * ratio, None, 5.2),
                     _drawn_log_x_axis(low, low * ratio, EngFormatter(), 8.0)):
            labels, overlap = _labels_in_view(axis)
            assert len(labels) >= 2 and len(set(labels)) == len(labels) and not overlap, (low, ratio, labels)


def test_a_log_axis_over_one_to_two_decades_labels_its_twos_and_fives():
    assert tick_labels_in_view(_drawn_log_axis(15, 400)) == ["20", "50", "100", "200"]
    assert tick_labels_in_view(_drawn_log_x_axis(1.5e4, 9e5, EngFormatter(), 8.0)) == [
        "20 k", "50 k", "100 k", "200 k", "500 k", "1 M"]
    # Over more than two decades two of them are in view: the decades alone, as before.
    assert tick_labels_in_view(_drawn_log_axis(15, 2000)) == ["100", "1e+03"]
