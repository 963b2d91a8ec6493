"""DataParallel vs DDP head to head (reports/dp_ddp.py): which rows, the figures, the section.

The gpubox fixture's linear workload (100,000 rows) has cuda 200 M samples/s at 1 GPU,
cuda-dp 190/240/280 M and cuda-ddp 195/380/720 M at 1/2/4 GPUs; the PyTorch peers added
here have torch-cuda 180 M, torch-dp 150/200 M and torch-ddp 300/560 M at 2/4 GPUs, their
phase cells empty (as the peers write them on GPUs). By hand, DDP ÷ DP:
  trainbench  1: 195/190 = 1.03×   2: 380/240 = 1.58×   4: 720/280 = 2.57×
  PyTorch     2: 300/150 = 2.00×   4: 560/200 = 2.80×
Phases (fixture: forward 0.40, backward 0.35, optimizer 0.10, transfer 0.05, comm 0.05 of
the time): cuda-dp at 2 GPUs takes 100,000 / 240e6 = 4.1667e-4 s per epoch, so forward
1.667e-4 s, comm 2.083e-5 s and other (the 5% left) 2.083e-5 s.
"""

import json
import math
import os

import pytest

import dp_ddp
import fixture_data as fx
from htmltables import section as section_of, tables
from load import PHASE_COLUMNS

L = fx.LINEAR
PEERS = {("torch-cuda", 1, "0", 1): 180e6,
         ("torch-dp", 2, "0,1", 1): 150e6, ("torch-dp", 4, "0,1,2,3", 1): 200e6,
         ("torch-ddp", 2, "0,1", 1): 300e6, ("torch-ddp", 4, "0,1,2,3", 1): 560e6}
SHARED = ("cuda-dp", 2, "0,0", 16)


def _write(folder, rows, curves, machine="gpubox"):
    os.makedirs(folder, exist_ok=True)
    fx.write_csv(os.path.join(folder, "results.csv"), fx.RESULT_COLUMNS, rows)
    fx.write_csv(os.path.join(folder, "curves.csv"), fx.CURVE_COLUMNS, curves)
    with open(os.path.join(folder, "env.json"), "w", encoding="utf-8") as f:
        json.dump(fx.env_for(machine), f)
    return str(folder)


@pytest.fixture
def with_peers(monkeypatch):
    """The gpubox linear workload with PyTorch GPU peers and one shared-device cuda-dp row."""
    monkeypatch.setitem(fx.TRAITS, "torch-cuda", ("pytorch", "gpu", "none", "", "false"))
    monkeypatch.setitem(fx.TRAITS, "torch-dp", ("pytorch", "gpu", "dp", "torch-cuda", "false"))
    monkeypatch.setitem(fx.TRAITS, "torch-ddp", ("pytorch", "gpu", "ddp", "torch-cuda", "false"))
    table = {**fx.THROUGHPUT["gpubox"][L], **PEERS}
    table[SHARED] = 100e6
    monkeypatch.setitem(fx.THROUGHPUT["gpubox"], L, table)


def _peer_run(folder):
    rows, curves = fx.build_rows("gpubox")
    for r in rows:
        if r["backend"].startswith("torch-"):
            for c in PHASE_COLUMNS:
                r[c] = ""   # no per-phase clocks on the GPU (bench/peers/pytorch_train.py)
    return _write(folder, rows, curves)


def _section(html):
    assert '<section id="dp-vs-ddp"><h2>DataParallel vs DDP</h2>' in html
    return section_of(html, "dp-vs-ddp")


def test_only_gpu_workloads_with_both_dp_and_ddp_rows_get_a_comparison(tmp_path, with_peers):
    s = fx.summarize(_peer_run(tmp_path / "gpu"))
    cs = dp_ddp.comparisons(s)
    # The MLP workload has cuda-ddp but no DataParallel row: nothing is said about it.
    assert [c.workload for c in cs] == [L]
    c = cs[0]
    assert c.counts == [1, 2, 4]
    assert [s.label for s in c.series] == [
        "trainbench 1 GPU (cuda)", "trainbench DataParallel (cuda-dp)", "trainbench DDP (cuda-ddp)",
        "PyTorch 1 GPU (torch-cuda)", "PyTorch DataParallel (torch-dp)", "PyTorch DDP (torch-ddp)"]
    ratio = {impl: {n: v[0] for n, v in by_n.items()} for impl, by_n in c.ratios.items()}
    assert ratio["trainbench"] == pytest.approx({1: 195 / 190, 2: 380 / 240, 4: 720 / 280})
    assert ratio["pytorch"] == pytest.approx({2: 300 / 150, 4: 560 / 200})
    # The shared-device row is not 2 GPUs: left out, and said so.
    assert all(g.devices != "0,0" for s_ in c.series for g in s_.groups.values())
    assert len(c.notes) == 1 and "shared-device" in c.notes[0] and "0,0" in c.notes[0]


def test_the_section_shows_samples_per_s_ratios_and_phases_side_by_side(tmp_path, with_peers):
    section = _section(fx.render_html(_peer_run(tmp_path / "gpu")))
    thr, phases = tables(section)
    by = {r["configuration"]: r for r in thr}
    assert by["trainbench DataParallel (cuda-dp)"]["2 GPUs samples/s"] == "240 M"
    assert by["trainbench DDP (cuda-ddp)"]["4 GPUs samples/s"] == "720 M"
    assert by["trainbench 1 GPU (cuda)"]["1 GPU samples/s"] == "200 M"
    assert by["trainbench 1 GPU (cuda)"]["2 GPUs samples/s"] == "–"
    assert by["PyTorch DDP (torch-ddp)"]["2 GPUs samples/s"] == "300 M"
    assert [by["trainbench: DDP ÷ DP"][f"{n} GPU{'s' if n > 1 else ''} samples/s"]
            for n in (1, 2, 4)] == ["1.03×", "1.58×", "2.57×"]
    assert [by["PyTorch: DDP ÷ DP"][f"{n} GPU{'s' if n > 1 else ''} samples/s"]
            for n in (1, 2, 4)] == ["–", "2.00×", "2.80×"]
    ph = {(r["GPUs"], r["configuration"]): r for r in phases}
    dp2 = ph[("2", "trainbench DataParallel (cuda-dp)")]
    assert dp2["time per epoch (s)"] == "0.0004167"
    assert dp2["forward (s/epoch)"] == "0.0001667"
    assert dp2["comm (s/epoch)"] == "2.083e-05"
    assert dp2["other (s/epoch)"] == "2.083e-05"
    peer = ph[("4", "PyTorch DataParallel (torch-dp)")]
    assert peer["forward (s/epoch)"] == "not measured"
    assert peer["other (s/epoch)"] == peer["time per epoch (s)"] == "0.0005"   # 100,000 / 200e6
    assert section.count("<img ") == 2   # samples/s vs GPUs, phases
    assert "shared-device" in section


def test_absent_without_both_kinds_on_gpus(tmp_path, cpu_run):
    # cpubox: cpu-ddp has no DataParallel twin, the GPU rows are skipped: no section, no link.
    html = fx.render_html(cpu_run)
    assert 'id="dp-vs-ddp"' not in html and "DataParallel vs DDP" not in html
    # gpubox without cuda-dp: DDP alone is no head to head.
    folder = fx.write_run(tmp_path / "noddp", "gpubox", drop=("cuda-dp",))
    assert dp_ddp.comparisons(fx.summarize(folder)) == []
    assert 'id="dp-vs-ddp"' not in fx.render_html(folder)


def test_dp_and_ddp_are_told_by_the_parallelism_column_not_the_name(tmp_path, monkeypatch):
    # A renamed backend with the dp trait still counts; cuda-dp recast as ddp does not.
    monkeypatch.setitem(fx.TRAITS, "cuda-dp", ("trainbench", "gpu", "ddp", "cuda", "false"))
    folder = fx.write_run(tmp_path / "recast", "gpubox")
    assert dp_ddp.comparisons(fx.summarize(folder)) == []


def test_rows_on_distinct_gpus_by_bus_id_are_kept_and_shared_ones_left_out(tmp_path, monkeypatch):
    # cuda-ddp with one GPU per task reads devices 0,0,0,0 on four bus ids: four GPUs, kept
    # (it was left out as shared-device); cuda-dp slots 0,1 on one bus id: one GPU, left out.
    table = dict(fx.THROUGHPUT["gpubox"][L])
    del table[("cuda-ddp", 4, "0,1,2,3", 16)]
    bound, slots = ("cuda-ddp", 4, "0,0,0,0", 16), ("cuda-dp", 2, "0,1", 16)
    table[bound] = 720e6
    monkeypatch.setitem(fx.THROUGHPUT["gpubox"], L, table)
    buses = {(L, bound): {"gpu_bus_ids": "0000:1b:00.0,0000:3b:00.0,0000:5e:00.0,0000:86:00.0"},
             (L, slots): {"gpu_bus_ids": "0000:3b:00.0,0000:3b:00.0"}}
    f = dp_ddp.figures(fx.summarize(fx.write_run(tmp_path / "bound", "gpubox", settings=buses)))["dp_vs_ddp"]
    assert len(f) == 1 and f[0]["gpus"] == [1, 2, 4]
    assert f[0]["ddp_over_dp"]["trainbench"]["4"] == pytest.approx(720 / 280)
    assert "2" not in f[0]["ddp_over_dp"]["trainbench"]
    assert any("cuda-dp ×2" in n and "shared-device" in n for n in f[0]["notes"])


def test_figures_for_summary_json(tmp_path, with_peers):
    f = dp_ddp.figures(fx.summarize(_peer_run(tmp_path / "gpu")))["dp_vs_ddp"]
    assert len(f) == 1 and f[0]["workload"] == L and f[0]["gpus"] == [1, 2, 4]
    assert f[0]["ddp_over_dp"]["trainbench"]["4"] == pytest.approx(720 / 280)
    dp = next(s for s in f[0]["series"] if s["label"] == "trainbench DataParallel (cuda-dp)")
    assert dp["samples_per_s"]["2"] == pytest.approx(240e6)
    assert dp["phases_s_per_epoch"]["2"]["forward"] == pytest.approx(0.4 * 1e5 / 240e6)
    peer = next(s for s in f[0]["series"] if s["label"] == "PyTorch DDP (torch-ddp)")
    assert peer["phases_s_per_epoch"]["4"] is None


# --- failed configurations are shown where they would be, as in the other sections ------

KILLED = "rank 2 exited with signal 9 (Killed)"
OOM = "out of device memory"
DP2, DDP4 = ("cuda-dp", 2, "0,1", 16), ("cuda-ddp", 4, "0,1,2,3", 16)
# cuda-ddp ×4 failed in all five repetitions, cuda-dp ×2 in the first only: its median is
# that of the other four (jitter +1%, −1%, +0.5%, −0.5%), still 240 M.
FAILED = {(L, DDP4): {r: f"failed: {KILLED}" for r in range(5)}, (L, DP2): {0: f"failed: {OOM}"}}


@pytest.fixture
def figures(monkeypatch):
    """The Figures dp_ddp draws, by title."""
    out = {}
    real = dp_ddp.plots._png

    def capture(fig):
        out[fig.get_axes()[0].get_title()] = fig
        return real(fig)
    monkeypatch.setattr(dp_ddp.plots, "_png", capture)
    return out


def test_a_failed_configuration_keeps_its_place_with_why(tmp_path):
    c = dp_ddp.comparisons(fx.summarize(fx.write_run(tmp_path / "f", "gpubox", failed_reps=FAILED)))[0]
    ddp = next(s for s in c.series if s.label == "trainbench DDP (cuda-ddp)")
    assert sorted(ddp.groups) == [1, 2, 4] and ddp.failed_at == [4] and sorted(ddp.measured) == [1, 2]
    # DDP ÷ DP at 4 GPUs: no DDP figure, no ratio; at 2 the measured cuda-dp repetitions.
    assert c.ratios["trainbench"][2][0] == pytest.approx(380 / 240) and 4 not in c.ratios["trainbench"]


def test_the_section_says_failed_with_the_reasons_and_their_counts(tmp_path, figures):
    html = fx.render_html(fx.write_run(tmp_path / "f", "gpubox", failed_reps=FAILED))
    section = _section(html)
    thr, phases = tables(section)
    by = {r["configuration"]: r for r in thr}
    assert by["trainbench DDP (cuda-ddp)"]["4 GPUs samples/s"] == f"failed: {KILLED} (5 of 5 repetitions)"
    assert by["trainbench DataParallel (cuda-dp)"]["2 GPUs samples/s"] == "240 M ⚠ 1 of 5 reps failed"
    assert f'title="1 failed: {OOM}">⚠ 1 of 5 reps failed' in section     # the reason, on hover
    assert by["trainbench: DDP ÷ DP"]["4 GPUs samples/s"] == "–"
    ph = {(r["GPUs"], r["configuration"]): r for r in phases}
    ddp4 = ph[("4", "trainbench DDP (cuda-ddp)")]
    assert ddp4["time per epoch (s)"] == f"failed: {KILLED} (5 of 5 repetitions)"
    assert ddp4["forward (s/epoch)"] == "–"
    # The workload's notes list each reason once in the report (test_render.py); not here too.
    assert "failed — " not in section and html.count(f"failed — {KILLED}") == 1
    # The plots: a ✗ at 4 GPUs, the DDP line not drawn across it; a "failed" phases row.
    (ax,) = figures[f"{L}: DataParallel vs DDP"].get_axes()
    assert [t.get_text() for t in ax.texts] == ["cuda-ddp ×4 failed"]
    ddp = next(x for x in ax.containers if x.get_label() == "trainbench DDP (cuda-ddp)")
    xs, ys = ddp.lines[0].get_data()
    assert list(xs) == [1, 2, 4] and math.isnan(ys[2]) and ys[1] == pytest.approx(380e6)
    (ax,) = figures[f"{L}: where the time goes, DataParallel vs DDP"].get_axes()
    assert [t.get_text() for t in ax.texts] == [f"✗ failed: {KILLED}"]
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == "4 GPUs: trainbench DDP (cuda-ddp)"


def test_a_head_to_head_whose_dataparallel_all_failed_is_still_shown(tmp_path):
    # Leaving it out would read as "no DataParallel was run".
    failed = {(L, k): {r: f"failed: {OOM}" for r in range(5)}
              for k in fx.THROUGHPUT["gpubox"][L] if k[0] == "cuda-dp"}
    folder = fx.write_run(tmp_path / "f", "gpubox", failed_reps=failed)
    (c,) = dp_ddp.comparisons(fx.summarize(folder))
    assert c.ratios == {}
    by = {r["configuration"]: r for r in tables(_section(fx.render_html(folder)))[0]}
    assert [by["trainbench DataParallel (cuda-dp)"][f"{n} GPU{'s' if n > 1 else ''} samples/s"]
            for n in (1, 2, 4)] == [f"failed: {OOM} (5 of 5 repetitions)"] * 3


def test_summary_json_names_the_failed_counts(tmp_path):
    f = dp_ddp.figures(fx.summarize(fx.write_run(tmp_path / "f", "gpubox", failed_reps=FAILED)))
    series = {s["label"]: s for s in f["dp_vs_ddp"][0]["series"]}
    ddp, dp = series["trainbench DDP (cuda-ddp)"], series["trainbench DataParallel (cuda-dp)"]
    assert sorted(ddp["samples_per_s"]) == ["1", "2"] and "4" not in ddp["phases_s_per_epoch"]
    assert ddp["failed_reasons"] == {"4": [{"reason": KILLED, "count": 5}]}
    assert dp["failed_reasons"] == {"2": [{"reason": OOM, "count": 1}]}
    assert dp["samples_per_s"]["2"] == pytest.approx(240e6)
