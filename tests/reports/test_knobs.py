"""A configuration is all its cells: two runs that differ only in one knob are two
groups in the report and in compare, each labelled with that knob, each checked
against the reference trained with the same setting; and every baseline (CPU, GPU,
oracle, scaling base) comes from the trait columns, not from backend names.

The fixtures start from fixture_data's machines and add rows: cpu-omp (8 threads)
and reference once more with --shuffle (slower, another final loss), cuda once more
with --cuda-graph (a knob only cuda honours), and renamed backends.
"""

import json
import os

import compare
import derive
import fmt
import fixture_data as fx
import render
from htmltables import cell, find_rows, tables
from load import load_run

LIN = fx.LINEAR
OMP8 = ("cpu-omp", 1, "cpu", 8)
REF = ("reference", 1, "cpu", 1)
CUDA = ("cuda", 1, "0", 16)
SHUFFLED_LOSS = 0.0123


def _write(folder, machine, extra, speed=None, rename=None, run=None):
    """fixture_data's run plus `extra` = [(key, samples/s, final loss, {column: cell})]
    configurations of LIN; rename = {old backend: (new name, {column: cell})}; run: the
    run id (default fixture_data.run_id(machine))."""
    os.makedirs(folder, exist_ok=True)
    rows, curves = fx.build_rows(machine, speed=speed)
    for key, sps, loss, cells in extra:
        for rep, j in enumerate(fx.JITTER):
            row = fx.result_row(machine, LIN, key, rep, sps * (1 + j), loss, settings=cells)
            rows.append(row)
            for epoch in range(1, fx.EPOCHS + 1):
                curve = {c: row[c] for c in fx.CURVE_COLUMNS if c in row}
                curve.update(epoch=epoch, train_loss=repr(loss * (1 + 1.0 / epoch)))
                curves.append(curve)
    for old, (new, cells) in (rename or {}).items():
        for r in rows + curves:
            if r["backend"] == old:
                r["backend"] = new
                r.update({k: v for k, v in cells.items() if k in r})
    env = fx.env_for(machine)
    if run is not None:
        for r in rows + curves:
            r["run_id"] = run
        env["run_id"] = run
    fx.write_csv(os.path.join(folder, "results.csv"), fx.RESULT_COLUMNS, rows)
    fx.write_csv(os.path.join(folder, "curves.csv"), fx.CURVE_COLUMNS, curves)
    with open(os.path.join(folder, "env.json"), "w", encoding="utf-8") as f:
        json.dump(env, f)
    return str(folder)


SHUFFLED = [(OMP8, 4_000_000.0, SHUFFLED_LOSS * (1 + 2e-6), {"shuffle": "true"}),
            (REF, 350_000.0, SHUFFLED_LOSS, {"shuffle": "true"})]


def _render(folder):
    assert render.main([folder]) == 0
    with open(os.path.join(folder, "report.html"), encoding="utf-8") as f:
        return f.read()


def _lin(html):
    return html.split(f"<h2>{LIN}</h2>", 1)[1].split("<h2>", 1)[0]


def test_two_configurations_differing_only_in_shuffle_are_two_labelled_groups(tmp_path):
    run = _write(tmp_path / "shuffle", "cpubox", SHUFFLED)
    lin = next(w for w in derive.summarize([load_run(run)]).workloads if w.name == LIN)
    omp8 = [g for g in lin.groups if g.backend == "cpu-omp" and g.threads == 8]
    assert sorted(g.settings for g in omp8) == ["shuffle=false", "shuffle=true"]
    plain, shuffled = sorted(omp8, key=lambda g: g.settings)
    assert plain.med_sps == 5_000_000.0 and shuffled.med_sps == 4_000_000.0
    assert len(plain.rows) == len(shuffled.rows) == len(fx.JITTER)
    # Each is checked against the reference trained the same way, and has its own curve.
    assert shuffled.ref.config["shuffle"] is True and plain.ref.config["shuffle"] is False
    assert shuffled.loss_state == plain.loss_state == "match"
    assert shuffled.curve[0][1] == SHUFFLED_LOSS * (1 + 2e-6) * 2
    assert plain.curve != shuffled.curve
    # A setting that does not tell groups apart is not shown: cpu-omp at 4 threads.
    assert next(g for g in lin.groups if g.backend == "cpu-omp" and g.threads == 4).settings == ""

    html = _lin(_render(run))
    a = find_rows(html, backend="cpu-omp shuffle=false", threads="8")
    b = find_rows(html, backend="cpu-omp shuffle=true", threads="8")
    assert len(a) == len(b) == 1
    assert cell(a[0], "samples/s (median)") == fmt.sps(5e6)
    assert cell(b[0], "samples/s (median)") == fmt.sps(4e6)
    assert cell(b[0], "vs reference").startswith("✓")
    assert find_rows(html, backend="reference shuffle=true")
    assert find_rows(html, backend="reference shuffle=false")
    assert "differ in shuffle: false, true" in html


def test_compare_keeps_the_two_apart_and_names_the_knob(tmp_path, capsys):
    base = _write(tmp_path / "base", "cpubox", SHUFFLED)
    slow = [(OMP8, 3_000_000.0, *SHUFFLED[0][2:]), SHUFFLED[1]]
    new = _write(tmp_path / "new", "cpubox", slow, run="20261123-020000-cpubox")
    # cpubox's cpu-ddp ×2 MLP row failed (in both runs): exit 3 comes before the regression's 1.
    assert compare.main([base, new]) == compare.EXIT_FAILED
    out = capsys.readouterr().out
    assert "FAIL (exit 1): 1 regression(s)" in out
    regressions = [line for line in out.splitlines() if "REGRESSION" in line]
    assert len(regressions) == 1, out
    assert "cpu-omp" in regressions[0] and "shuffle=true" in regressions[0]
    assert any("cpu-omp" in line and "shuffle=false" in line and " ok" in line for line in out.splitlines())


def test_a_knob_only_one_backend_honours_labels_its_groups(tmp_path):
    run = _write(tmp_path / "graph", "gpubox", [(CUDA, 260_000_000.0, 0.0100431 * (1 + 2e-6),
                                                 {"cuda_graph": "true"})])
    html = _lin(_render(run))
    graph = find_rows(html, backend="cuda cuda_graph=true")
    plain = find_rows(html, backend="cuda cuda_graph=false")
    assert len(graph) == len(plain) == 1
    assert cell(graph[0], "speedup vs cuda") == "1.30×"  # 260M / 200M: the plain cuda row is the base
    assert find_rows(html, backend="cuda-dp", world_size="2")  # others keep their plain label


def test_baselines_come_from_traits_not_names(tmp_path):
    """The same CPU box with every backend renamed: the report finds the oracle, the CPU
    baseline and cpu-ddp's scaling base from the trait columns alone; a peer on the CPU
    (implementation pytorch) is never the baseline and sorts after ours."""
    peer = ("torch-cpu", 1, "cpu", 8)
    fx.TRAITS["torch-cpu"] = ("pytorch", "cpu", "none", "", "false")
    try:
        run = _write(tmp_path / "renamed", "cpubox", [(peer, 9_000_000.0, 0.0100431 * (1 + 2e-6), {})],
                     rename={"reference": ("oracle64", {}), "cpu-omp": ("cpu-fast", {}),
                             "cpu-ddp": ("cpu-multi", {"scaling_base": "cpu-fast"})})
    finally:
        del fx.TRAITS["torch-cpu"]
    html = _lin(_render(run))
    # cpu-multi ×2 (5.22M) is the fastest CPU configuration of ours; the peer (9M) is not ours.
    assert "speedup vs fastest CPU: cpu-multi ×2 (4 thr)" in html
    multi = find_rows(html, backend="cpu-multi", world_size="2")[0]
    assert cell(multi, "scaling efficiency") == "87.0% vs cpu-fast"   # 5.22M / 3M / 2
    assert cell(find_rows(html, backend="oracle64")[0], "vs reference") == "reference"
    torch = find_rows(html, backend="torch-cpu")[0]
    assert cell(torch, "speedup vs fastest CPU") == f"{9 / 5.22:.2f}×" == "1.72×"
    assert cell(torch, "vs reference").startswith("✓")
    shown = [r["backend"] for r in tables(html)[0]]
    assert shown == ["oracle64", "cpu-fast", "cpu-fast", "cpu-multi", "cpu-multi", "torch-cpu"]


def test_a_knob_left_empty_is_not_written_into_the_label(tmp_path):
    """Look-alikes told apart by a knob that one of them leaves empty (a backend that does
    not take it): the label said "workers=" for the empty one; now only the other says it."""
    alike = dict(workload="w", backend="cpu-omp", world_size=1, devices="cpu", threads=8)
    assert derive.distinguishing([dict(alike, workers=None), dict(alike, workers=2)]) == ["", "workers=2"]
    assert derive.distinguishing([dict(alike, workers=None, shuffle=True),
                                  dict(alike, workers=2, shuffle=False)]) == ["shuffle=true",
                                                                              "shuffle=false workers=2"]
    # The same from a results.csv: cpu-omp (8 thr) once more with a workers cell.
    run = _write(tmp_path / "workers", "cpubox", [(OMP8, 4_000_000.0, fx.WORKLOADS[LIN]["ref_loss"], {"workers": "2"})])
    lin = next(w for w in derive.summarize([load_run(run)]).workloads if w.name == LIN)
    omp8 = sorted(g.label() for g in lin.groups if g.backend == "cpu-omp" and g.threads == 8)
    assert omp8 == ["cpu-omp (8 thr)", "cpu-omp (8 thr) workers=2"]
