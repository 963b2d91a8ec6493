"""Time to target in the report (reports/time_to_target.py): the columns target_loss,
target_reached, time_to_target_s and target_epoch read from results.csv, the medians over
the repetitions that reached the target, and rows that never did.

cpubox's linear workload with target_loss 0.02 on every row; by hand:
  cpu-omp 8 threads  every repetition reached it: times 0.5 0.7 0.6 0.55 0.65 s -> median
                     0.6 s; epochs 2 3 2 2 3 -> median 2; "5 of 5"
  cpu-omp 4 threads  three reached it (1.0, 1.2, 1.1 s at epochs 3, 4, 3): median 1.1 s,
                     epoch 3; "3 of 5"
  reference          none did: "not reached (0 of 5)", time and epoch "–"
"""

import json
import os

import pytest

import derive
import fixture_data as fx
import load
import render
import time_to_target
from htmltables import report_section, section as section_of, tables
from load import load_runs

L = fx.LINEAR
C8, C4 = ("cpu-omp", 1, "cpu", 8), ("cpu-omp", 1, "cpu", 4)
REACHED = {C8: [(0.5, 2), (0.7, 3), (0.6, 2), (0.55, 2), (0.65, 3)],
           C4: [(1.0, 3), None, (1.2, 4), None, (1.1, 3)]}


def _target_run(folder, **kw):
    rows, curves = fx.build_rows("cpubox", **kw)
    for r in rows:
        if r["workload"] != L:
            continue
        r["target_loss"] = "0.02"
        for c in curves:
            if (c["workload"], c["backend"], c["threads"], c["world_size"]) == \
                    (L, r["backend"], r["threads"], r["world_size"]):
                c["target_loss"] = "0.02"
        if r["status"] != "ok":
            continue
        hits = REACHED.get((r["backend"], r["world_size"], r["devices"], r["threads"]))
        hit = hits[r["repetition"]] if hits else None
        r["target_reached"] = "true" if hit else "false"
        r["time_to_target_s"] = repr(hit[0]) if hit else ""
        r["target_epoch"] = str(hit[1]) if hit else ""
    os.makedirs(folder, exist_ok=True)
    fx.write_csv(os.path.join(folder, "results.csv"), fx.RESULT_COLUMNS, rows)
    fx.write_csv(os.path.join(folder, "curves.csv"), fx.CURVE_COLUMNS, curves)
    with open(os.path.join(folder, "env.json"), "w", encoding="utf-8") as f:
        json.dump(fx.env_for("cpubox"), f)
    return str(folder)


def test_the_columns_are_in_the_schema():
    for col, kind in [("target_loss", "float"), ("target_reached", "bool"),
                      ("time_to_target_s", "float"), ("target_epoch", "int")]:
        c = load.COLUMN[col]
        assert c["type"] == kind and c["nullable"], col
    assert "target_loss" in load.WORKLOAD_COLUMNS   # rows with another target are another configuration


def test_medians_over_the_repetitions_that_reached_it(tmp_path):
    es = {(e.group.backend, e.group.threads): e
          for e in time_to_target.entries(derive.summarize(load_runs([_target_run(tmp_path / "t")])))}
    e8, e4, ref = es[("cpu-omp", 8)], es[("cpu-omp", 4)], es[("reference", 1)]
    assert (e8.reached, e8.reps, e8.median_s, e8.median_epoch) == (5, 5, pytest.approx(0.6), 2)
    assert (e4.reached, e4.reps, e4.median_s, e4.median_epoch) == (3, 5, pytest.approx(1.1), 3)
    assert (ref.reached, ref.median_s, ref.median_epoch) == (0, None, None)
    assert all(e.target == 0.02 for e in es.values())
    # The MLP workload has no target: no entries for it.
    assert {e.workload for e in es.values()} == {L}


def test_the_section_in_the_report(tmp_path):
    folder = _target_run(tmp_path / "t")
    assert render.main([folder]) == 0
    with open(os.path.join(folder, "report.html"), encoding="utf-8") as f:
        html = f.read()
    assert '<a href="#time-to-target">Time to target</a>' in html
    section = section_of(html, "time-to-target")
    rows = {r["configuration"]: r for t in tables(section) for r in t}
    assert rows["cpu-omp (8 thr)"]["time to target (s)"] == "0.6"
    assert rows["cpu-omp (8 thr)"]["epoch"] == "2"
    assert rows["cpu-omp (8 thr)"]["reached"] == "5 of 5"
    assert rows["cpu-omp (4 thr)"]["reached"] == "3 of 5"
    assert rows["cpu-omp (4 thr)"]["time to target (s)"] == "1.1"
    assert rows["reference (1 thr)"]["reached"] == "not reached (0 of 5)"
    assert rows["reference (1 thr)"]["time to target (s)"] == "–"
    assert section.count("<img ") == 1


def test_absent_without_targets(cpu_run):
    assert render.main([cpu_run]) == 0
    with open(os.path.join(cpu_run, "report.html"), encoding="utf-8") as f:
        assert 'id="time-to-target"' not in f.read()


def test_figures_for_summary_json(tmp_path):
    f = time_to_target.figures(derive.summarize(load_runs([_target_run(tmp_path / "t")])))
    by = {x["configuration"]: x for x in f["time_to_target"]}
    assert by["cpu-omp (4 thr)"]["median_time_to_target_s"] == pytest.approx(1.1)
    assert by["cpu-omp (4 thr)"]["reached"] == 3 and by["cpu-omp (4 thr)"]["repetitions"] == 5
    assert by["reference (1 thr)"]["median_time_to_target_s"] is None


def test_failed_configurations_are_shown_failed_in_the_table_and_the_plot(tmp_path, monkeypatch):
    """cpu-ddp ×2 failed in every repetition and cpu-omp (4 thr) in one: the first
    vanished from the section, the second read "3 of 5" like a clean one."""
    ddp2 = (L, ("cpu-ddp", 2, "cpu", 4))
    why = "failed: rank 1 exited with signal 9 (Killed)"
    folder = _target_run(tmp_path / "t", failed_reps={ddp2: {r: why for r in range(5)},
                                                       (L, C4): {1: why}})
    figures = []
    real = time_to_target.figure
    monkeypatch.setattr(time_to_target, "figure", lambda es: figures.append(real(es)) or figures[-1])
    assert render.main([folder]) == 0
    section = report_section(folder, "time-to-target")
    rows = {r["configuration"]: r for t in tables(section) for r in t}
    assert rows["cpu-ddp ×2 (4 thr)"]["reached"] == "failed: rank 1 exited with signal 9 (Killed)"
    assert rows["cpu-ddp ×2 (4 thr)"]["time to target (s)"] == "–"
    # Repetition 1 was one that did not reach the target: 3 of the 4 measured did.
    assert rows["cpu-omp (4 thr)"]["reached"] == "3 of 4 (1 failed: rank 1 exited with signal 9 (Killed))"
    (ax,) = figures[0].get_axes()
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == f"{L}: cpu-ddp ×2 (4 thr) (loss ≤ 0.02)"
    assert [t.get_text() for t in ax.texts] == ["✗ failed: rank 1 exited with signal 9 (Killed)"]
