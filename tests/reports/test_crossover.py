"""Crossovers along a size sweep (reports/crossover.py): sweep detection, the named
point, the interpolated crossing, "no crossover", and the report section.

The width sweep below (MLP 64,W,10, W = 64, 128, 256, 512) has, in samples/s:
  cpu-omp 1 thread   100 k   60 k    30 k    15 k
  cpu-omp 2 threads   80 k   54 k   37.5 k   24 k     ratio 2/1: 0.8, 0.9, 1.25, 1.6
  cuda                50 k   50 k    50 k    48 k
  reference            1 k    1 k     1 k     1 k     (the oracle: not a contender)
By hand: 2 threads beat 1 from width 256 (the ratio crosses 1 between 128 and 256);
log-log interpolation x* = 128 · 2^(ln 0.9 / (ln 0.9 − ln 1.25)) = 128 · 2^0.32073 = 159.86
-> "160". The best CPU is 100 k, 60 k, 37.5 k, 24 k, so cuda / best = 0.5, 0.833, 1.333,
2.0: cuda beats the best CPU from width 256, x* = 128 · 2^(ln(5/6) / (ln(5/6) − ln(4/3)))
= 128 · 2^0.38792 = 167.47 -> "167".
"""

import math
import os

import pytest

import crossover
import fixture_data as fx
import render
from axes_text import tick_labels_in_view
from htmltables import report_section, section as section_of, tables

T1, T2 = ("cpu-omp", 1, "cpu", 1), ("cpu-omp", 1, "cpu", 2)
CUDA, REF = ("cuda", 1, "0", 1), ("reference", 1, "cpu", 1)
WIDTH = {64: {T1: 100e3, T2: 80e3, CUDA: 50e3, REF: 1e3},
         128: {T1: 60e3, T2: 54e3, CUDA: 50e3, REF: 1e3},
         256: {T1: 30e3, T2: 37.5e3, CUDA: 50e3, REF: 1e3},
         512: {T1: 15e3, T2: 24e3, CUDA: 48e3, REF: 1e3}}
# A batch sweep in which one thread stays ahead: no crossover.
BATCH = {64: {T1: 2.0e6, T2: 1.5e6}, 256: {T1: 3.0e6, T2: 2.9e6}, 1024: {T1: 4.0e6, T2: 3.5e6}}


def _mlp(width):
    return dict(model="mlp", layers=f"64,{width},10", dataset="synthetic-classification(seed=1)",
                task="classification", n_samples=8192, batch_size=256, lr=0.1, ref_loss=1.5,
                ref_acc=0.5)


def _linear(batch):
    return dict(model="linear", layers="64,1", dataset="synthetic-regression(seed=1,noise=0.1)",
                task="regression", n_samples=65536, batch_size=batch, lr=0.05, ref_loss=0.01,
                ref_acc=None)


@pytest.fixture
def sweep_run(tmp_path, monkeypatch):
    return _sweep(tmp_path / "xo", monkeypatch)


def _sweep(folder, monkeypatch, **kw):
    table = {}
    for w, t in WIDTH.items():
        monkeypatch.setitem(fx.WORKLOADS, f"xo-w{w}", _mlp(w))
        table[f"xo-w{w}"] = t
    for b, t in BATCH.items():
        monkeypatch.setitem(fx.WORKLOADS, f"xo-b{b}", _linear(b))
        table[f"xo-b{b}"] = t
    monkeypatch.setitem(fx.THROUGHPUT, "cpubox", table)
    return fx.write_run(folder, "cpubox", not_run=False, **kw)


def test_crossings_by_hand():
    a = {64: 80.0, 128: 54.0, 256: 37.5, 512: 24.0}
    b = {64: 100.0, 128: 60.0, 256: 30.0, 512: 15.0}
    cs, sizes, leader, failed = crossover.crossings(a, b, "A", "B")
    assert sizes == [64, 128, 256, 512] and leader == "" and failed == ()
    assert len(cs) == 1
    c = cs[0]
    assert (c.faster, c.slower, c.at, c.between) == ("A", "B", 256, (128, 256))
    assert c.estimate == pytest.approx(128 * 2 ** (math.log(0.9) / (math.log(0.9) - math.log(1.25))))
    assert c.estimate == pytest.approx(159.86, abs=0.01)
    # Two flips: B leads, A leads, B leads again; a tie is no flip of its own.
    cs, _, _, _ = crossover.crossings({1: 1, 2: 3, 4: 2, 8: 1}, {1: 2, 2: 2, 4: 2, 8: 2}, "A", "B")
    assert [(c.faster, c.at) for c in cs] == [("A", 2), ("B", 8)]
    cs, _, leader, _ = crossover.crossings({1: 2, 2: 3}, {1: 1, 2: 1}, "A", "B")
    assert cs == [] and leader == "A"


def test_the_width_sweep_names_the_crossing_points(sweep_run):
    sws = {sw.axis: sw for sw in crossover.sweeps(fx.summarize(sweep_run))}
    assert set(sws) == {"width", "batch"}
    sw = sws["width"]
    assert sw.sizes == [64, 128, 256, 512]
    assert sw.workloads == ["xo-w64", "xo-w128", "xo-w256", "xo-w512"]
    assert list(sw.series) == ["cpu-omp (1 thr)", "cpu-omp (2 thr)", "cuda (GPU 0)"]  # no oracle
    flips, flat = crossover.statements(sw)
    assert flat == []
    assert ("cpu-omp (2 thr) beats cpu-omp (1 thr) from width 256 (crossing ≈ 160, log-log "
            "interpolation between 128 and 256)") in flips
    assert ("cuda (GPU 0) beats the best CPU from width 256 (crossing ≈ 167, log-log "
            "interpolation between 128 and 256)") in flips
    best = [p for p in sw.pairs if p.b == crossover.BEST_CPU]
    assert len(best) == 1 and best[0].crossings[0].estimate == pytest.approx(
        128 * 2 ** (math.log(5 / 6) / (math.log(5 / 6) - math.log(4 / 3))))


def test_no_crossing_says_so(sweep_run):
    sw = next(sw for sw in crossover.sweeps(fx.summarize(sweep_run)) if sw.axis == "batch")
    assert sw.sizes == [64, 256, 1024]
    flips, flat = crossover.statements(sw)
    assert flips == []
    assert flat == ["cpu-omp (1 thr) vs cpu-omp (2 thr): no crossover in the measured range "
                    "(batch 64–1024): cpu-omp (1 thr) faster at every size"]


def test_the_section_in_the_report(sweep_run):
    assert render.main([sweep_run]) == 0
    with open(os.path.join(sweep_run, "report.html"), encoding="utf-8") as f:
        html = f.read()
    assert '<a href="#crossovers">Crossovers</a>' in html
    section = section_of(html, "crossovers")
    assert "cpu-omp (2 thr) beats cpu-omp (1 thr) from width 256" in section
    assert "No crossover in the measured range</b> (batch 64–1024)" in section
    rows = {r["configuration"]: r for t in tables(section) for r in t}
    assert rows["cpu-omp (2 thr)"]["width 256 samples/s"] == "37.5 k"
    assert rows["cuda (GPU 0)"]["width 512 samples/s"] == "48 k"
    assert section.count("<img ") == 2


def test_workloads_differing_in_two_sizes_or_none_are_no_sweep(tmp_path, cpu_run, monkeypatch):
    # The fixture machines' workloads differ in model, layers, rows and batch at once.
    assert crossover.sweeps(fx.summarize(cpu_run)) == []
    # Weak-scaling members grow rows and batch together: not a sweep of either.
    fx.add_weak_family(monkeypatch, "gpubox", "weak", {1: {("cuda-ddp", 1, "0", 16): 1e3},
                                                       2: {("cuda-ddp", 2, "0,1", 16): 1.9e3}})
    folder = fx.write_run(tmp_path / "weak", "gpubox")
    assert crossover.sweeps(fx.summarize(folder)) == []
    assert render.main([folder]) == 0
    with open(os.path.join(folder, "report.html"), encoding="utf-8") as f:
        assert 'id="crossovers"' not in f.read()


def test_figures_for_summary_json(sweep_run):
    f = {x["axis"]: x for x in crossover.figures(fx.summarize(sweep_run))["crossovers"]}
    w = f["width"]
    assert w["sizes"] == [64, 128, 256, 512]
    two = next(c for c in w["crossings"] if c["faster"] == "cpu-omp (2 thr)")
    assert (two["slower"], two["from"], two["between"]) == ("cpu-omp (1 thr)", 256, [128, 256])
    assert two["interpolated"] == pytest.approx(159.86, abs=0.01)
    assert f["batch"]["crossings"] == []
    assert f["batch"]["no_crossover"][0]["leader"] == "cpu-omp (1 thr)"


OOM = {r: "failed: out of host memory" for r in range(5)}


def test_no_crossing_is_interpolated_across_a_failed_size(tmp_path, monkeypatch):
    """cpu-omp (2 thr) failed at width 256, where it overtakes one thread: the crossing was
    interpolated between 128 and 512 as if 256 had not been there."""
    folder = _sweep(tmp_path / "xo", monkeypatch, failed_reps={("xo-w256", T2): OOM})
    sw = next(sw for sw in crossover.sweeps(fx.summarize(folder)) if sw.axis == "width")
    assert sw.sizes == [64, 128, 256, 512]
    assert {lab: sorted(f) for lab, f in sw.failed.items()} == {"cpu-omp (2 thr)": [256]}
    flips, flat = crossover.statements(sw)
    assert flips == [
        "cpu-omp (2 thr) beats cpu-omp (1 thr) at width 512, not at 128; cpu-omp (2 thr) failed "
        "at width 256 between them: no crossing estimated",
        # cuda / one thread: 5/6 at 128, 5/3 at 256: 128 · 2^(ln(5/6) / (ln(5/6) − ln(5/3))) = 153.9
        "cuda (GPU 0) beats cpu-omp (1 thr) from width 256 (crossing ≈ 154, log-log "
        "interpolation between 128 and 256)",
        "cuda (GPU 0) beats cpu-omp (2 thr) at width 512, not at 128; cpu-omp (2 thr) failed at "
        "width 256 between them: no crossing estimated",
        # The best of the CPU configurations that ran is not the best CPU where one failed.
        "cuda (GPU 0) beats the best CPU at width 512, not at 128; the best CPU failed at width "
        "256 between them: no crossing estimated"]
    assert flat == []
    assert all(c.estimate is None for p in sw.pairs for c in p.crossings if c.failed)
    f = next(x for x in crossover.figures(fx.summarize(folder))["crossovers"] if x["axis"] == "width")
    assert f["failed"] == [{"label": "cpu-omp (2 thr)", "sizes": [256]}]
    bridged = [c for c in f["crossings"] if c["failed_between"]]
    assert len(bridged) == 3 and all(c["interpolated"] is None for c in bridged)


def test_the_section_shows_the_failed_point_and_draws_no_crossing_through_it(tmp_path, monkeypatch):
    folder = _sweep(tmp_path / "xo", monkeypatch, failed_reps={("xo-w256", T2): OOM})
    figs = []
    real = crossover.plots._png
    monkeypatch.setattr(crossover.plots, "_png", lambda fig: (figs.append(fig), real(fig))[1])
    assert render.main([folder]) == 0
    section = report_section(folder, "crossovers")
    rows = {r["configuration"]: r for t in tables(section) for r in t}
    assert rows["cpu-omp (2 thr)"]["width 256 samples/s"] == "failed: out of host memory"
    assert rows["cpu-omp (2 thr)"]["width 512 samples/s"] == "24 k"
    (ax,) = next(f for f in figs if "samples/s vs width" in f.get_axes()[0].get_title()).get_axes()
    assert [t.get_text() for t in ax.texts if "failed" in t.get_text()] == ["cpu-omp (2 thr) failed"]
    two = next(l for l in ax.get_lines() if l.get_label() == "cpu-omp (2 thr)")
    xs, ys = two.get_data()
    assert list(xs) == [64, 128, 256, 512] and math.isnan(ys[2])
    # One dotted line: cuda vs one thread; none for the three flips across the failure.
    assert [round(l.get_xdata()[0]) for l in ax.get_lines() if l.get_linestyle() == ":"] == [154]


def test_a_layers_cell_that_is_no_list_of_widths_is_on_no_axis(tmp_path, monkeypatch):
    """A hand-edited layers cell ('64,zz,10') raised ValueError: no report at all."""
    folder = _sweep(tmp_path / "xo", monkeypatch,
                    settings={("xo-w128", k): {"layers": "64,zz,10"} for k in (T1, T2, CUDA, REF)})
    sw = next(sw for sw in crossover.sweeps(fx.summarize(folder)) if sw.axis == "width")
    assert sw.sizes == [64, 256, 512]
    assert render.main([folder]) == 0


def test_a_samples_per_s_axis_within_one_decade_has_labelled_ticks(sweep_run, monkeypatch):
    """The batch sweep runs from 1.5 M to 4 M samples/s: no decade in view, and the ticks
    between were turned off (minorticks_off), so its y-axis showed no number at all."""
    figs = []
    real = crossover.plots._png
    monkeypatch.setattr(crossover.plots, "_png", lambda fig: (figs.append(fig), real(fig))[1])
    sw = next(sw for sw in crossover.sweeps(fx.summarize(sweep_run)) if sw.axis == "batch")
    crossover.plot(sw)
    (ax,) = figs[0].get_axes()
    assert tick_labels_in_view(ax.yaxis) == ["2 M", "3 M", "4 M"]
    assert ax.get_ylabel() == "samples/s (median), log scale"
    assert tick_labels_in_view(ax.xaxis) == ["64", "256", "1024"]   # the sizes, no minor ticks
