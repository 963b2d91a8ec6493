"""Weak scaling across workloads <stem>-x1, -x2, -x4: derived efficiencies and the HTML section.

The samples/s are chosen so the efficiencies are exact: with 1,000 samples/s at
N=1, 1,900 at N=2 and 3,600 at N=4, efficiency = sps / (N × 1,000) = 100%, 95%,
90% (the repetition jitter is symmetric, so the medians are these values).
"""


import pytest

import derive
import fixture_data as fx
import render
from htmltables import cell, tables
from load import load_runs

STEM = "weak-mlp-4096"
DDP = {1: {("cuda-ddp", 1, "0", 16): 1000.0},
       2: {("cuda-ddp", 2, "0,1", 16): 1900.0},
       4: {("cuda-ddp", 4, "0,1,2,3", 16): 3600.0}}
N_HEAD = "N (GPUs / ranks)"


def _weak_section(html):
    assert '<section id="weak-scaling"><h2>Weak scaling</h2>' in html
    return html.split("<h2>Weak scaling</h2>", 1)[1].split("</section>", 1)[0]


def _weak_rows(section):
    """Rows of the weak tables, keyed (backend, N)."""
    rows = {}
    for t in tables(section):
        for r in t:
            key = (r["backend"], int(r[N_HEAD]))
            assert key not in rows, key
            rows[key] = r
    return rows


@pytest.fixture
def weak_run(tmp_path, monkeypatch):
    fx.add_weak_family(monkeypatch, "gpubox", STEM, DDP)
    return fx.write_run(tmp_path / "weak", "gpubox")


def test_efficiencies_are_derived_exactly(weak_run):
    s = fx.summarize(weak_run)
    assert [f.stem for f in s.weak] == [STEM]
    fam = s.weak[0]
    assert fam.workloads == [f"{STEM}-x1", f"{STEM}-x2", f"{STEM}-x4"]
    assert [(g.backend, g.weak_n) for g in fam.members] == [("cuda-ddp", 1), ("cuda-ddp", 2),
                                                             ("cuda-ddp", 4)]
    assert [g.weak_efficiency for g in fam.members] == pytest.approx([1.0, 0.95, 0.90])
    assert [g.per_rank_batch for g in fam.members] == [1024, 1024, 1024]
    assert [g.sps_per_rank for g in fam.members] == pytest.approx([1000.0, 950.0, 900.0])
    base = fam.members[0]
    assert all(g.weak_base is base for g in fam.members)
    assert fam.notes == []
    # Other workloads take no part: their groups keep weak_n None.
    assert all(g.weak_n is None for w in s.workloads for g in w.groups
               if not w.name.startswith(STEM))


def test_html_has_the_section_table_plot_and_formula(weak_run):
    html = fx.render_html(weak_run)
    assert '<a href="#weak-scaling">Weak scaling</a>' in html
    section = _weak_section(html)
    assert f"{STEM}-xN" in section
    rows = _weak_rows(section)
    assert set(rows) == {("cuda-ddp", 1), ("cuda-ddp", 2), ("cuda-ddp", 4)}
    expect = {1: ("1,000", "1,000", "100.0%"), 2: ("1,900", "950", "95.0%"),
              4: ("3,600", "900", "90.0%")}
    for n, (sps, per_rank, eff) in expect.items():
        r = rows[("cuda-ddp", n)]
        assert cell(r, "per-rank batch") == "1024"
        assert cell(r, "samples/s (median)") == sps
        assert cell(r, "samples/s per rank") == per_rank
        assert cell(r, "weak-scaling efficiency") == eff
        assert cell(r, "workload") == f"{STEM}-x{n}"
    assert f"base of cuda-ddp: cuda-ddp (GPU 0) in {STEM}-x1, 1,000 samples/s" in section
    assert section.count('<img src="data:image/png;base64,') == 1
    assert "weak-scaling efficiency (%) vs GPUs / ranks, with the 100% ideal line" in section
    formulas = html.split('<section id="formulas">', 1)[1]
    assert "weak-scaling efficiency" in formulas and "per-rank batch" in formulas


def test_no_xn_workloads_no_weak_section(gpu_run):
    assert fx.summarize(gpu_run).weak == []
    html = fx.render_html(gpu_run)
    assert "Weak scaling" not in html and 'id="weak-scaling"' not in html


def test_a_lone_xn_workload_is_not_a_family(tmp_path, monkeypatch):
    fx.add_weak_family(monkeypatch, "gpubox", "solo", {2: DDP[2]})
    run = fx.write_run(tmp_path / "solo", "gpubox")
    assert fx.summarize(run).weak == []
    assert "Weak scaling" not in fx.render_html(run)


def test_world_size_not_matching_the_suffix_is_ignored(tmp_path, monkeypatch):
    members = {1: DDP[1], 2: DDP[2],
               4: {**DDP[4], ("cuda-ddp", 2, "0,1", 16): 1500.0, ("cuda", 1, "0", 16): 800.0}}
    fx.add_weak_family(monkeypatch, "gpubox", STEM, members)
    run = fx.write_run(tmp_path / "mismatch", "gpubox")
    fam = fx.summarize(run).weak[0]
    assert [(g.backend, g.world_size) for g in fam.members] == [("cuda-ddp", 1), ("cuda-ddp", 2),
                                                                 ("cuda-ddp", 4)]
    assert [g.weak_efficiency for g in fam.members] == pytest.approx([1.0, 0.95, 0.90])
    assert fam.notes == [
        f"{STEM}-x4: cuda (GPU 0) ignored — world size 1 is not the 4 of the name",
        f"{STEM}-x4: cuda-ddp ×2 (GPU 0,1) ignored — world size 2 is not the 4 of the name"]
    section = _weak_section(fx.render_html(run))
    rows = _weak_rows(section)
    assert set(rows) == {("cuda-ddp", 1), ("cuda-ddp", 2), ("cuda-ddp", 4)}
    assert cell(rows[("cuda-ddp", 2)], "samples/s (median)") == "1,900"   # not the 1,500 row
    assert "cuda-ddp ×2 (GPU 0,1) ignored — world size 2 is not the 4 of the name" in section


def test_cuda_ddp_without_its_own_x1_falls_back_to_cuda(tmp_path, monkeypatch):
    fx.add_weak_family(monkeypatch, "gpubox", STEM,
                       {1: {("cuda", 1, "0", 16): 2000.0},
                        2: {("cuda-ddp", 2, "0,1", 16): 3800.0},
                        8: {("cuda-ddp", 8, "0,1,2,3,4,5,6,7", 16): 14400.0}})
    run = fx.write_run(tmp_path / "fallback", "gpubox")
    fam = fx.summarize(run).weak[0]
    ddp = [g for g in fam.members if g.backend == "cuda-ddp"]
    assert [g.weak_n for g in ddp] == [2, 8]
    assert [g.weak_efficiency for g in ddp] == pytest.approx([0.95, 0.90])
    assert all(g.weak_base.backend == "cuda" and g.weak_base.workload == f"{STEM}-x1"
               for g in ddp)
    rows = _weak_rows(_weak_section(fx.render_html(run)))
    assert cell(rows[("cuda-ddp", 8)], "weak-scaling efficiency") == "90.0% vs cuda"
    assert cell(rows[("cuda-ddp", 8)], "per-rank batch") == "1024"
    assert cell(rows[("cuda-ddp", 8)], "samples/s per rank") == "1,800"
    assert cell(rows[("cuda", 1)], "weak-scaling efficiency") == "100.0%"


def test_cpu_ddp_lines_per_thread_count_have_their_own_base(tmp_path, monkeypatch):
    fx.add_weak_family(monkeypatch, "cpubox", "weak-cpu",
                       {1: {("cpu-ddp", 1, "cpu", 2): 500.0, ("cpu-ddp", 1, "cpu", 4): 800.0},
                        2: {("cpu-ddp", 2, "cpu", 2): 900.0, ("cpu-ddp", 2, "cpu", 4): 1200.0}})
    run = fx.write_run(tmp_path / "cpu", "cpubox")
    fam = fx.summarize(run).weak[0]
    got = {(g.threads, g.weak_n): g.weak_efficiency for g in fam.members}
    assert got == pytest.approx({(2, 1): 1.0, (2, 2): 0.9, (4, 1): 1.0, (4, 2): 0.75})
    section = _weak_section(fx.render_html(run))
    assert "base of cpu-ddp (2 thr): cpu-ddp (2 thr) in weak-cpu-x1, 500 samples/s" in section


def test_family_without_x1_shows_rows_without_efficiency(tmp_path, monkeypatch):
    fx.add_weak_family(monkeypatch, "gpubox", STEM, {2: DDP[2], 4: DDP[4]})
    run = fx.write_run(tmp_path / "nox1", "gpubox")
    fam = fx.summarize(run).weak[0]
    assert [g.weak_efficiency for g in fam.members] == [None, None]
    assert fam.notes == [f"no {STEM}-x1 workload: no base, efficiency not computed"]
    section = _weak_section(fx.render_html(run))
    assert cell(_weak_rows(section)[("cuda-ddp", 4)], "weak-scaling efficiency") == "–"
    assert "<img" not in section                      # nothing to plot without a base


def test_uneven_per_rank_batch_is_noted(tmp_path, monkeypatch):
    fx.add_weak_family(monkeypatch, "gpubox", STEM, {1: DDP[1], 2: DDP[2]})
    monkeypatch.setitem(fx.WORKLOADS, f"{STEM}-x2", fx.weak_workload(2, batch=1024 // 2))
    run = fx.write_run(tmp_path / "uneven", "gpubox")
    fam = fx.summarize(run).weak[0]
    assert [g.per_rank_batch for g in fam.members] == [1024, 512]
    assert fam.notes == ["cuda-ddp: per-rank batch differs across N (512, 1024) — "
                         "not weak scaling"]


def test_merged_runs_keep_a_line_per_machine(tmp_path, monkeypatch):
    fx.add_weak_family(monkeypatch, "gpubox", STEM, DDP)
    fx.add_weak_family(monkeypatch, "cpubox", STEM,
                       {1: {("cpu-ddp", 1, "cpu", 4): 100.0},
                        2: {("cpu-ddp", 2, "cpu", 4): 190.0}})
    gpu = fx.write_run(tmp_path / "gpu", "gpubox")
    cpu = fx.write_run(tmp_path / "cpu", "cpubox")
    s = derive.summarize(load_runs([cpu, gpu]))
    fam = s.weak[0]
    got = {(g.origin, g.backend, g.weak_n): g.weak_efficiency for g in fam.members}
    assert got == pytest.approx({("cpubox", "cpu-ddp", 1): 1.0, ("cpubox", "cpu-ddp", 2): 0.95,
                                 ("gpubox", "cuda-ddp", 1): 1.0, ("gpubox", "cuda-ddp", 2): 0.95,
                                 ("gpubox", "cuda-ddp", 4): 0.90})
    assert render.main([cpu, gpu, "-o", str(tmp_path / "merged.html")]) == 0
    with open(tmp_path / "merged.html", encoding="utf-8") as f:
        section = _weak_section(f.read())
    machines = [r["machine"] for t in tables(section) for r in t]
    assert machines == ["cpubox", "cpubox", "gpubox", "gpubox", "gpubox"]


KILLED = {r: "failed: rank 3 exited with signal 9 (Killed)" for r in range(5)}
X4 = (f"{STEM}-x4", ("cuda-ddp", 4, "0,1,2,3", 16))


def test_a_member_that_failed_keeps_its_row_and_its_mark(tmp_path, monkeypatch):
    """cuda-ddp at N=4 failed: its row and its point vanished, so the family read as
    measured up to N=2 only."""
    import plots
    fx.add_weak_family(monkeypatch, "gpubox", STEM, DDP)
    run = fx.write_run(tmp_path / "f", "gpubox", failed_reps={X4: KILLED})
    fam = fx.summarize(run).weak[0]
    assert [(g.backend, g.weak_n) for g in fam.failed] == [("cuda-ddp", 4)]
    figures = []
    real_png = plots._png
    monkeypatch.setattr(plots, "_png", lambda fig: (figures.append(fig), real_png(fig))[1])
    section = _weak_section(fx.render_html(run))
    r = _weak_rows(section)[("cuda-ddp", 4)]
    assert cell(r, "samples/s (median)") == "failed: rank 3 exited with signal 9 (Killed)"
    assert cell(r, "per-rank batch") == "1024" and cell(r, "weak-scaling efficiency") == "–"
    assert [cell(x, "weak-scaling efficiency") for k, x in _weak_rows(section).items()
            if k[1] < 4] == ["100.0%", "95.0%"]
    (ax,) = next(f for f in figures if "weak-scaling efficiency" in f.get_axes()[0].get_title()).get_axes()
    assert [t.get_text() for t in ax.texts] == ["cuda-ddp N=4 failed"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4"]


def test_a_base_that_failed_is_named_not_missing(tmp_path, monkeypatch):
    fx.add_weak_family(monkeypatch, "gpubox", STEM, DDP)
    x1 = (f"{STEM}-x1", ("cuda-ddp", 1, "0", 16))
    run = fx.write_run(tmp_path / "f", "gpubox", failed_reps={x1: KILLED})
    fam = fx.summarize(run).weak[0]
    assert fam.notes == [f"cuda-ddp: its base cuda-ddp (GPU 0) in {STEM}-x1 failed: rank 3 exited "
                         "with signal 9 (Killed), efficiency not computed"]
