"""Finite but extreme numbers (a samples_per_s of 1e308, hand-edited): the report and the
compare gate never raise on them (fsum overflowed in the CV: a traceback) and never
print a non-finite figure ("inf", "nan") as a result."""

import math
import re
import warnings

import compare
import fixture_data as fx
import fmt
import plots
import stats
from htmltables import cell, find_rows

CUDA = ("cuda", 1, "0", 16)
HUGE = {(fx.LINEAR, CUDA): 1e308 / fx.THROUGHPUT["gpubox"][fx.LINEAR][CUDA]}  # 1e308 ±1%


def test_median_and_cv_of_values_near_the_largest_float():
    assert stats.median([1e308, 1.5e308]) == 1.25e308   # (a + b) / 2 is inf
    assert stats.median([1e308, 1e308, 1.7e308]) == 1e308
    assert stats.median([3, 4]) == 3.5
    v = stats.cv([1e308, 1.01e308, 0.99e308])          # fsum raised OverflowError
    assert math.isfinite(v) and abs(v - stats.cv([1.0, 1.01, 0.99])) < 1e-12


def test_formatters_never_print_a_non_finite_figure():
    for f in (fmt.sps, fmt.seconds, fmt.speedup, fmt.percent, fmt.signed_percent, fmt.pvalue,
              fmt.accuracy):
        assert f(float("inf")) == "–" and f(float("nan")) == "–"
    assert fmt.signed_percent(5e299) == "+5e+301%"      # not 300 digits
    assert fmt.loss(float("nan")) == "nan"               # said, not hidden as "–"


def test_a_huge_samples_per_s_renders_without_inf(tmp_path):
    folder = fx.write_run(tmp_path / "big", "gpubox", speed=HUGE)
    # matplotlib's tick arithmetic overflowed near 1.8e308 (RuntimeWarnings on the terminal).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        html = fx.render_html(folder)
    assert not caught, [f"{w.filename}:{w.lineno}: {w.message}" for w in caught]
    lin = next(w for w in fx.summarize(folder).workloads if w.name == fx.LINEAR)
    (ax,) = plots.throughput_figure(lin).get_axes()
    assert ax.get_xlabel() == "samples/s × 1e296 (median, whiskers min–max), log scale"
    row = find_rows(html, backend="cuda", world_size="1", devices="0")[0]  # the linear workload's
    assert cell(row, "samples/s (median)") == fmt.sps(1e308) == "1e+299 G"
    text = re.sub(r"data:image/png;base64,[^\"]*", "", html)
    assert not re.search(r"\b(inf|nan)\b", re.sub(r"<[^>]*>", " ", text), re.I)


def test_huge_samples_per_s_are_plotted_in_a_named_unit():
    """Below HUGE_SPS nothing changes; above, the axis names the power of ten plotted."""
    assert plots.sps_unit([5e6, 7.2e8]) == (1.0, "samples/s")
    div, unit = plots.sps_unit([2e5, 1.01e308, float("inf")])   # inf: no value to plot
    assert (div, unit) == (1e296, "samples/s × 1e296") and 1e12 <= 1.01e308 / div < 1e13


def test_compare_with_a_huge_samples_per_s_is_a_verdict_not_a_traceback(tmp_path, capsys):
    base = fx.write_run(tmp_path / "base", "gpubox", run="20261121-010000-gpubox")
    new = fx.write_run(tmp_path / "new", "gpubox", speed=HUGE)
    for a, b, verdict in ((base, new, "faster"), (new, base, "REGRESSION")):
        code = compare.main([a, b])
        out = capsys.readouterr().out
        line = next(l for l in out.splitlines() if l.startswith(fx.LINEAR) and "  cuda  " in l)
        assert verdict in line and "inf" not in line and "nan" not in line, line
        assert code == (0 if verdict == "faster" else compare.EXIT_REGRESSION)
