"""render.py on fixture runs: headline, per-workload tables, numbers computed by hand, marks.

Expected values come from fixture_data.THROUGHPUT (median samples/s per row,
the repetition jitter is symmetric so the median is the listed value).
"""

import json
import os
import re
import statistics
import sys

import derive
import fixture_data as fx
import render
from conftest import REPO
from htmltables import cell, find_rows, tables

LIN, MLP = fx.LINEAR, fx.MLP


def _render(*dirs, out=None):
    args = [str(d) for d in dirs] + (["-o", str(out)] if out else [])
    assert render.main(args) == 0
    path = out or os.path.join(dirs[0], "report.html")
    with open(path, encoding="utf-8") as f:
        return f.read()


def _row(html, workload, backend, ws, devices=None):
    """The row of a workload table (tables are in workload order; search by section)."""
    section = html.split(f'<h2>{workload}</h2>', 1)[1].split("<h2>", 1)[0]
    match = dict(backend=backend, world_size=ws)
    if devices is not None:
        match["devices"] = devices
    rows = find_rows(section, **match)
    assert len(rows) == 1, rows
    return rows[0]


def test_default_output_is_report_html_in_first_dir(gpu_run):
    html = _render(gpu_run)
    assert html.startswith("<!DOCTYPE html>")
    assert not [f for f in os.listdir(gpu_run) if f.endswith(".tmp")]


def test_gpu_speedups_and_efficiency_match_hand_computation(gpu_run):
    html = _render(gpu_run)
    t = fx.THROUGHPUT["gpubox"][LIN]
    cpu = t[("cpu-omp", 1, "cpu", 16)]
    cuda = t[("cuda", 1, "0", 16)]
    ddp4 = t[("cuda-ddp", 4, "0,1,2,3", 16)]
    dp2 = t[("cuda-dp", 2, "0,1", 16)]
    row = _row(html, LIN, "cuda-ddp", "4")
    assert cell(row, "speedup vs fastest CPU: cpu-omp (16 thr)") == f"{ddp4 / cpu:.2f}×" == "90.00×"
    assert cell(row, "speedup vs cuda (1 GPU)") == f"{ddp4 / cuda:.2f}×" == "3.60×"
    assert cell(row, "scaling efficiency") == "90.0% vs cuda"      # 720M / 200M / 4
    assert cell(row, "samples/s (median)") == "720 M"
    assert cell(row, "samples/s min–max") == "712.8 M–727.2 M"
    row = _row(html, LIN, "cuda-dp", "2")
    assert cell(row, "scaling efficiency") == f"{100 * dp2 / cuda / 2:.1f}% vs cuda" == "60.0% vs cuda"
    row = _row(html, LIN, "cuda", "1")
    assert cell(row, "speedup vs fastest CPU") == "25.00×"
    assert cell(row, "speedup vs cuda") == "1.00×"
    assert cell(row, "time / epoch (s)") == f"{100000 / cuda:.4g}" == "0.0005"
    cv = statistics.stdev([1 + j for j in fx.JITTER]) / statistics.fmean([1 + j for j in fx.JITTER])
    assert cell(row, "CV") == f"{100 * cv:.1f}%"
    assert cell(row, "scaling efficiency") == "–"   # world size 1
    assert "speedup vs fastest CPU: cpu-omp (16 thr)" in html


def test_cpu_only_run(cpu_run):
    html = _render(cpu_run)
    row = _row(html, LIN, "cpu-ddp", "2")
    # cpu-ddp ×2 (5.22M) is the fastest CPU configuration: the baseline (cpu-omp 8 thr: 5M).
    assert cell(row, "speedup vs fastest CPU: cpu-ddp ×2 (4 thr)") == "1.00×"
    omp8 = find_rows(html.split(f"<h2>{LIN}</h2>", 1)[1], backend="cpu-omp", threads="8")[0]
    assert cell(omp8, "speedup vs fastest CPU") == f"{5e6 / 5.22e6:.2f}×" == "0.96×"
    # cpu-ddp's scaling_base is cpu-omp: 5.22M / (cpu-omp at the same 4 threads: 3M) / 2
    assert cell(row, "scaling efficiency") == "87.0% vs cpu-omp"
    section = html.split(f"<h2>{LIN}</h2>", 1)[1].split("<h2>", 1)[0]
    assert "speedup vs cuda" not in section          # no single-GPU row on a CPU box
    assert "accuracy" not in tables(section)[0][0]   # regression: no accuracy column
    mlp = _row(html, MLP, "cpu-omp", "1")
    assert cell(mlp, "accuracy") == "92.13%"


def test_skipped_and_failed_are_listed_with_reasons(cpu_run):
    html = _render(cpu_run)
    reason = "no CUDA device (cudaGetDeviceCount: no CUDA-capable device is detected)"
    assert f"<b>1×</b> {reason}" in html and "<b>2×</b> no CUDA device " in html
    skipped = find_rows(html.split(reason, 1)[1], workload=LIN, backend="cuda", devices="0")
    assert skipped, "skipped cuda row under its reason"
    assert "Skipped (3, by reason)" in html
    assert "FAILED (1 configuration(s), 1 repetition(s))" in html
    assert find_rows(html, backend="cpu-ddp", reason="rank 1 exited with signal 9 (Killed)")
    assert "cpu-ddp ×2 (4 thr): failed — rank 1 exited with signal 9 (Killed)" in html


def test_losses_matching_reference_get_a_check_mark(gpu_run):
    html = _render(gpu_run)
    row = _row(html, LIN, "cuda-ddp", "4")
    assert cell(row, "vs reference (rel. tol 0.001)").startswith("✓")
    assert cell(_row(html, LIN, "reference", "1"), "vs reference") == "reference"
    assert "✗ MISMATCH (" not in html and "class=\"mismatch\"" not in html
    assert "match the reference loss within 0.001" in html


def test_loss_mismatch_gets_the_loud_mark(tmp_path):
    key = ("cuda-ddp", 2, "0,1", 16)
    run = fx.write_run(tmp_path / "bad", "gpubox", loss_factor={(MLP, key): 1.25})
    html = _render(run)
    row = _row(html, MLP, "cuda-ddp", "2")
    assert cell(row, "vs reference") == "✗ MISMATCH (2.5e-01)"
    assert '<tr class="mismatch">' in html
    assert "do NOT match the reference loss" in html
    assert cell(_row(html, MLP, "cuda", "1"), "vs reference").startswith("✓")


def test_no_reference_row_says_so(tmp_path):
    run = fx.write_run(tmp_path / "noref", "gpubox", drop={"reference"})
    html = _render(run)
    assert cell(_row(html, LIN, "cuda", "1"), "vs reference") == "no reference"
    assert "No reference row: final losses are not checked." in html


def test_noisy_rows_are_flagged(tmp_path):
    key = ("cuda", 1, "0", 16)
    run = fx.write_run(tmp_path / "noisy", "gpubox", jitter={(LIN, key): [0.0, 0.1, -0.1]})
    html = _render(run)
    assert cell(_row(html, LIN, "cuda", "1"), "CV").startswith("⚠")
    assert "CV of samples/s above 5%" in html
    assert cell(_row(html, LIN, "cuda-dp", "2"), "CV") == "0.8%"


def test_shared_device_rows_get_a_badge_and_a_note(tmp_path, monkeypatch):
    # cuda-dp on logical slots 0,0 (two replicas on one GPU) next to real GPUs 0,1.
    monkeypatch.setitem(fx.THROUGHPUT["gpubox"][LIN], ("cuda-dp", 2, "0,0", 16), 150_000_000.0)
    html = _render(fx.write_run(tmp_path / "shared", "gpubox"))
    shared = _row(html, LIN, "cuda-dp", "2", devices="0,0 shared-device")
    assert cell(shared, "samples/s (median)") == "150 M"
    assert _row(html, LIN, "cuda-dp", "2", devices="0,1")            # distinct GPUs: no badge
    assert _row(html, LIN, "cuda-ddp", "4", devices="0,1,2,3")
    assert "shared-device: cuda-dp ×2 (GPU 0,0) — the devices list repeats a GPU" in html
    assert html.count('title="several replicas on one physical GPU') == 1
    section = html.split(f"<h2>{MLP}</h2>", 1)[1].split("<h2>", 1)[0]
    assert "shared-device" not in section                            # only where such a row is


def test_shared_device_follows_pci_bus_ids_where_rows_record_them(tmp_path, monkeypatch):
    # One GPU per task (srun --gpus-per-task): every rank sees its own GPU as device 0, so
    # devices reads 0,0,0,0; the bus ids are distinct: not shared. Slots named 0,1 that
    # are one physical GPU (the same bus id twice): shared, though the indices differ.
    bound = ("cuda-ddp", 4, "0,0,0,0", 16)
    monkeypatch.setitem(fx.THROUGHPUT["gpubox"][LIN], bound, 700_000_000.0)
    buses = {(LIN, bound): {"gpu_bus_ids": "0000:1b:00.0,0000:3b:00.0,0000:5e:00.0,0000:86:00.0"},
             (LIN, ("cuda-dp", 2, "0,1", 16)): {"gpu_bus_ids": "0000:3b:00.0,0000:3b:00.0"}}
    html = _render(fx.write_run(tmp_path / "bound", "gpubox", settings=buses))
    section = html.split(f"<h2>{LIN}</h2>", 1)[1].split("<h2>", 1)[0]
    assert _row(html, LIN, "cuda-ddp", "4", devices="0,0,0,0")          # no badge
    assert _row(html, LIN, "cuda-dp", "2", devices="0,1 shared-device")
    assert section.count('title="several replicas on one physical GPU') == 1
    assert 'title="PCI bus ids: 0000:3b:00.0,0000:3b:00.0"' in section
    assert "shared-device: cuda-dp ×2 (GPU 0,1)" in section


def test_merged_report_keeps_both_machines(cpu_run, gpu_run, tmp_path):
    out = tmp_path / "merged.html"
    html = _render(cpu_run, gpu_run, out=out)
    assert find_rows(html, machine="cpubox", backend="cpu-omp", threads="8")
    assert find_rows(html, machine="gpubox", backend="cuda-ddp", world_size="4")
    assert "speedup vs fastest CPU: gpubox: cpu-omp (16 thr)" in html
    assert "AMD EPYC 7B13" in html and "4× NVIDIA H100 80GB HBM3" in html


def test_report_is_self_contained_with_plots_env_and_formulas(gpu_run):
    html = _render(gpu_run)
    # 2 workloads × (throughput, scaling, phases, loss curves), and DataParallel vs DDP
    # (samples/s and phases) for the linear workload, which has cuda-dp and cuda-ddp rows
    assert html.count('<img src="data:image/png;base64,') == 8 + 2
    assert "<script" not in html
    assert "http://" not in html and "https://" not in html
    assert "580.65.06" in html and "NVIDIA H100 80GB HBM3" in html
    assert "0123456789ab (clean)" in html
    for name in ("speedup vs the fastest CPU", "scaling efficiency", "CV", "loss check"):
        assert find_rows(html, figure=name), name


def _scaling_bases(text, after="scaling_base"):
    """{(base, backend, "GPUs"/"CPUs"/None)} that the text's first parenthesis after `after`
    lists: "(cuda for cuda-dp and cuda-ddp; torch-cpu for torch-ddp on CPUs and ...)"."""
    listed = re.search(re.escape(after) + r"[^(]*\(([^)]*)\)", text.replace("`", ""))[1]
    pairs = set()
    for clause in re.split(r"[;,] (?=[\w-]+ for )", listed):
        base, backends = clause.split(" for ", 1)
        for backend in re.split(r", | and ", backends):
            name, _, where = backend.partition(" on ")
            pairs.add((base, name, where or None))
    return pairs


def test_the_scaling_efficiency_formula_names_the_base_of_every_backend():
    """The formula printed in the report (derive.FORMULAS) and README's table name every
    backend's scaling base as the rows carry it: trainbench's as reports/schema.json (the
    harness's) describes the column, the peers' as peer_rows.peer_traits writes them. The
    report's left out cpu-hogwild's, torch-ddp's and torch-hogwild's."""
    with open(os.path.join(REPO, "reports", "schema.json"), encoding="utf-8") as f:
        column = next(c for c in json.load(f)["results"] if c["name"] == "scaling_base")
    expected = _scaling_bases(column["description"], after="measured against")
    sys.path.insert(0, os.path.join(REPO, "bench", "peers"))
    import peer_rows  # noqa: PLC0415 (no torch)
    for backend in ("torch-cpu", "torch-cuda", "torch-dp", "torch-ddp", "torch-hogwild"):
        on = {where: peer_rows.peer_traits(backend, devices)["scaling_base"]
              for where, devices in (("GPUs", "0,1"), ("CPUs", "cpu"))}
        if len(set(on.values())) == 1:
            expected |= {(base, backend, None) for base in on.values() if base}
        else:
            expected |= {(base, backend, where) for where, base in on.items() if base}
    assert ("cpu-omp", "cpu-hogwild", None) in expected and ("torch-cpu", "torch-ddp", "CPUs") in expected
    formula = dict(derive.FORMULAS)["scaling efficiency"]
    assert _scaling_bases(formula) == expected
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        readme_row = next(line for line in f if line.startswith("| scaling efficiency |"))
    assert _scaling_bases(readme_row) == expected


def test_missing_curves_still_renders_with_a_note(gpu_run):
    os.remove(os.path.join(gpu_run, "curves.csv"))
    html = _render(gpu_run)
    assert "curves.csv: missing" in html
    assert html.count("<img") == 6 + 2   # no loss curves; DataParallel vs DDP's two plots


def test_all_skipped_run_renders(tmp_path):
    run = fx.write_run(tmp_path / "none", "cpubox", drop={"reference", "cpu-omp", "cpu-ddp"})
    html = _render(run)
    assert "No configuration of this workload produced results." in html
    assert "Skipped (3, by reason)" in html


def test_quoted_reason_with_comma_survives(gpu_run):
    with open(os.path.join(gpu_run, "results.csv"), encoding="utf-8") as f:
        assert '"skipped: NCCL not found (set NCCL_ROOT, then rebuild)"' in f.read()
    html = _render(gpu_run)
    reason = "NCCL not found (set NCCL_ROOT, then rebuild)"
    assert f"<b>1×</b> {reason}" in html
    assert find_rows(html.split(reason, 1)[1], backend="cuda-ddp", world_size="4")


def test_an_ok_row_without_phase_times_renders_them_as_other(tmp_path):
    """Phases are nullable: the PyTorch peers on GPUs do not time them (empty cells)."""
    rows, curves = fx.build_rows("gpubox")
    for r in rows:
        if r["backend"] == "cuda" and r["status"] == "ok":
            r.update(transfer_s="", forward_s="", backward_s="", optimizer_s="")
    folder = tmp_path / "nophases"
    fx.write_run(folder, "gpubox")
    fx.write_csv(os.path.join(folder, "results.csv"), fx.RESULT_COLUMNS, rows)
    _render(folder)
    import derive
    from load import load_run
    lin = derive.summarize([load_run(str(folder))]).workloads[0]
    cuda = next(g for g in lin.groups if g.backend == "cuda")
    assert cuda.phases["forward"] == 0.0 and cuda.phases["other"] > 0.0


# --- repetitions that failed among measured ones; failures counted, not repeated --------

DP2 = ("cuda-dp", 2, "0,1", 16)


def test_a_partly_failed_configuration_is_flagged_not_clean(tmp_path):
    """Two of cuda-dp ×2's five repetitions failed: its row read '3' reps and ✓, like a
    clean one, and the FAILED list and the notes named the failure once per repetition."""
    why = "failed: NCCL watchdog timeout"
    folder = fx.write_run(tmp_path / "p", "gpubox", failed_reps={(LIN, DP2): {1: why, 3: why}})
    html = _render(folder)
    section = html.split(f"<h2>{LIN}</h2>", 1)[1].split("<h2>", 1)[0]
    (row,) = find_rows(section, backend="cuda-dp ⚠ 2 of 5 reps failed", world_size="2")
    assert row["reps"] == "3 of 5 ok; 2 failed: NCCL watchdog timeout"
    assert cell(row, "vs reference").startswith("✓")   # the loss of the three that ran
    assert '<tr class="partial">' in section
    assert section.count("NCCL watchdog timeout") == 3  # the reps cell, its badge's title, one note
    assert "cuda-dp ×2 (GPU 0,1): failed — NCCL watchdog timeout <span class=\"muted\">(2 of 5 " \
           "repetitions)</span>" in section
    assert "FAILED (1 configuration(s), 2 repetition(s))" in html
    (failed,) = find_rows(html, backend="cuda-dp", reason="NCCL watchdog timeout")
    assert failed["repetitions failed"] == "2 of 5"


def test_a_configuration_failing_alike_in_every_repetition_is_one_entry(tmp_path):
    why = {r: "failed: rank 2 exited with signal 9 (Killed)" for r in range(5)}
    folder = fx.write_run(tmp_path / "f", "gpubox", failed_reps={(LIN, DP2): why})
    html = _render(folder)
    assert "FAILED (1 configuration(s), 5 repetition(s))" in html
    rows = find_rows(html, backend="cuda-dp", reason="rank 2 exited with signal 9 (Killed)")
    assert [r["repetitions failed"] for r in rows] == ["5 of 5"]
    assert html.count("cuda-dp ×2 (GPU 0,1): failed — rank 2 exited with signal 9 (Killed) "
                      '<span class="muted">(5 repetitions)</span>') == 1
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as f:
        doc = json.load(f)
    (entry,) = doc["failed"]["by_reason"]
    assert entry["count"] == 5 and len(entry["configurations"]) == 1
    assert entry["configurations"][0]["repetitions_failed"] == 5
    (lin,) = [w for w in doc["workloads"] if w["workload"] == LIN]
    assert [c["label"] for c in lin["failed_configurations"]] == ["cuda-dp ×2 (GPU 0,1)"]


def test_a_failed_row_with_only_its_required_cells_is_listed(tmp_path):
    """A failed row needs only its run, workload, backend and status: its empty world size
    and threads must not break the labels, the ordering or the plots that now show it."""
    from load import ALWAYS_REQUIRED
    rows, curves = fx.build_rows("cpubox")
    for r in rows:
        if r["status"].startswith("failed"):
            r.update({k: "" for k in r if k not in ALWAYS_REQUIRED})
    folder = tmp_path / "sparse"
    folder.mkdir()
    fx.write_csv(folder / "results.csv", fx.RESULT_COLUMNS, rows)
    fx.write_csv(folder / "curves.csv", fx.CURVE_COLUMNS, curves)
    (folder / "env.json").write_text(json.dumps(fx.env_for("cpubox")), encoding="utf-8")
    html = _render(folder)
    (row,) = find_rows(html, backend="cpu-ddp", reason="rank 1 exited with signal 9 (Killed)")
    assert (row["world size"], row["threads"], row["repetitions failed"]) == ("–", "–", "1 of 1")
    assert "cpu-ddp: failed — rank 1 exited with signal 9 (Killed)" in html
