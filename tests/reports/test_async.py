"""Asynchronous rows (the asynchronous trait: cpu-hogwild, torch-hogwild) in the report:
marked "asynchronous" beside the backend, checked against the reference within
ASYNC_LOSS_RTOL instead of the equivalence tolerance (and not checked with momentum
on several workers), placed beside cpu-omp and cpu-ddp at the same core count with
their scaling efficiency against cpu-omp (their scaling_base); compare gives them the
same bound.

The fixture is fixture_data's CPU machine (cpu-omp at 4 and 8 threads, cpu-ddp at 1
and 2 ranks of 4 threads) plus cpu-hogwild at 1 and 2 workers of 4 threads.
"""


import compare
import derive
import fixture_data as fx
from htmltables import cell, find_rows, tables
from test_knobs import _write

LIN = fx.LINEAR
HOG1 = ("cpu-hogwild", 1, "cpu", 4)
HOG2 = ("cpu-hogwild", 2, "cpu", 4)
REF_LOSS = fx.WORKLOADS[LIN]["ref_loss"]
OMP4_SPS = fx.THROUGHPUT["cpubox"][LIN][("cpu-omp", 1, "cpu", 4)]


def _hogwild(loss2=1.01, cells2=None):
    return [(HOG1, 3_100_000.0, REF_LOSS * (1 + 2e-6), {"workers": "1"}),
            (HOG2, 4_500_000.0, REF_LOSS * loss2, dict({"workers": "2"}, **(cells2 or {})))]


def _lin_rows(html, **match):
    """Rows of the linear workload's table (the first with a "vs reference" column)."""
    table = [t for t in tables(html) if t and any(k.startswith("vs reference") for k in t[0])][0]
    want = {k.replace("_", " "): str(v) for k, v in match.items()}
    return [r for r in table if all(r.get(k) == v for k, v in want.items())]


def test_asynchronous_rows_are_marked_and_checked_within_their_bound(tmp_path):
    html = fx.render_html(_write(tmp_path / "run", "cpubox", _hogwild()))
    (row,) = find_rows(html, world_size=2, threads=4, backend="cpu-hogwild asynchronous")
    loss = cell(row, "vs reference")
    assert loss.startswith(f"asynchronous: ✓ within {derive.ASYNC_LOSS_RTOL:g}"), loss
    assert "MISMATCH" not in loss
    # Scaling efficiency against cpu-omp at the same threads per process (scaling_base).
    assert cell(row, "scaling efficiency").endswith("vs cpu-omp"), cell(row, "scaling efficiency")
    # One worker: an asynchronous row too, within float rounding of the reference.
    (one,) = find_rows(html, world_size=1, threads=4, backend="cpu-hogwild asynchronous")
    assert cell(one, "vs reference").startswith("asynchronous: ✓")
    # The header names both tolerances; the headline too; a note says why.
    assert f"rel. tol {derive.LOSS_RTOL:g}; asynchronous {derive.ASYNC_LOSS_RTOL:g}" in html
    assert f"asynchronous ones within {derive.ASYNC_LOSS_RTOL:g}" in html
    assert "without locks (Hogwild!)" in html
    # Equivalence-checked rows keep the plain check.
    (omp,) = find_rows(html, backend="cpu-omp", threads=4)
    assert cell(omp, "vs reference").startswith("✓ (")


def test_hogwild_sits_beside_cpu_omp_and_cpu_ddp(tmp_path):
    folder = _write(tmp_path / "run", "cpubox", _hogwild())
    html = fx.render_html(folder)
    from load import load_runs
    w = [w for w in derive.summarize(load_runs([folder])).workloads if w.name == LIN][0]
    order = [(g.backend, g.world_size, g.threads) for g in w.groups]
    cpu = [o for o in order if o[0] in ("cpu-omp", "cpu-ddp", "cpu-hogwild")]
    assert cpu == [("cpu-omp", 1, 4), ("cpu-omp", 1, 8), ("cpu-ddp", 1, 4), ("cpu-ddp", 2, 4),
                   ("cpu-hogwild", 1, 4), ("cpu-hogwild", 2, 4)], order
    # In the table: the same rows, one after another, with the same CPU baseline header.
    backends = [r["backend"] for r in _lin_rows(html, threads=4) if "cpu-" in r["backend"]]
    assert backends == ["cpu-omp", "cpu-ddp", "cpu-ddp", "cpu-hogwild asynchronous",
                        "cpu-hogwild asynchronous"], backends
    hog2 = [g for g in w.groups if (g.backend, g.world_size) == ("cpu-hogwild", 2)][0]
    assert hog2.efficiency_base.backend == "cpu-omp" and hog2.efficiency_base.threads == 4
    assert abs(hog2.efficiency - 4_500_000 / OMP4_SPS / 2) < 1e-9


def test_beyond_the_bound_is_a_mismatch_and_momentum_is_not_checked(tmp_path):
    html = fx.render_html(_write(tmp_path / "bad", "cpubox", _hogwild(loss2=1.10)))
    (row,) = find_rows(html, world_size=2, threads=4, backend="cpu-hogwild asynchronous")
    assert cell(row, "vs reference").startswith(f"asynchronous: ✗ MISMATCH beyond {derive.ASYNC_LOSS_RTOL:g}")
    assert "do NOT match the reference loss" in html
    # With momentum (and a reference trained with it), several workers are not checked.
    mom = {"momentum": "0.9"}
    extra = _hogwild(loss2=1.25, cells2=mom) + [(("reference", 1, "cpu", 1), 400_000.0, REF_LOSS, mom)]
    html = fx.render_html(_write(tmp_path / "mom", "cpubox", extra))
    (row,) = _lin_rows(html, world_size=2, threads=4, backend="cpu-hogwild asynchronous")
    assert cell(row, "vs reference").startswith("asynchronous: not checked"), cell(row, "vs reference")
    assert "do NOT match" not in html


def test_compare_gives_asynchronous_rows_their_bound(tmp_path):
    base = _write(tmp_path / "base", "cpubox", _hogwild(loss2=1.01))
    new = _write(tmp_path / "new", "cpubox", _hogwild(loss2=0.99))  # another run: another loss
    from load import load_run
    rows, warnings = compare.compare(load_run(base), load_run(new), 0.05, 0.05)
    assert not [w for w in warnings if "final loss changed" in w], warnings
