"""The report's first screen and its baseline, on fixture runs, against hand-computed values.

Expected numbers come from fixture_data.THROUGHPUT (the repetition jitter is symmetric,
so the median is the listed value): the fastest CPU configuration of a workload is the
speedup baseline whatever its threads or ranks, the float64 reference never is, a
CPU row that failed its loss check never is; skipped rows collapse to one line per
reason; disturbed rows are marked and counted.
"""

import json
import os

import fixture_data as fx
import render
from htmltables import cell, find_rows, tables

LIN, MLP = fx.LINEAR, fx.MLP
OMP4, OMP8 = ("cpu-omp", 1, "cpu", 4), ("cpu-omp", 1, "cpu", 8)
DDP1, DDP2 = ("cpu-ddp", 1, "cpu", 4), ("cpu-ddp", 2, "cpu", 4)
REF = ("reference", 1, "cpu", 1)
GPU_OMP = ("cpu-omp", 1, "cpu", 16)


def _render(*dirs, out=None):
    args = [str(d) for d in dirs] + (["-o", str(out)] if out else [])
    assert render.main(args) == 0
    with open(out or os.path.join(dirs[0], "report.html"), encoding="utf-8") as f:
        return f.read()


def _section(html, workload):
    return html.split(f"<h2>{workload}</h2>", 1)[1].split("<h2>", 1)[0]


def _top(html):
    """The headline section (everything before the navigation)."""
    return html.split('<section class="headline"', 1)[1].split("<nav>", 1)[0]


def _glance(html):
    """The headline's per-workload table as {workload: row}."""
    rows = tables(_top(html))[0]
    return {r["workload"]: r for r in rows}


def _speedups(section, header="speedup vs fastest CPU"):
    return {r["backend"] + "×" + r["world size"] + "/" + r["threads"]: cell(r, header)
            for r in tables(section)[0]}


def test_fastest_cpu_is_the_baseline_whatever_its_parallelism(cpu_run):
    # cpubox linear: cpu-ddp ×2 (5.22M) beats cpu-omp at 8 threads (5M): it is the baseline.
    html = _render(cpu_run)
    lin = _section(html, LIN)
    assert "speedup vs fastest CPU: cpu-ddp ×2 (4 thr)" in lin
    s = _speedups(lin)
    assert s["cpu-ddp×2/4"] == "1.00×"
    assert s["cpu-omp×1/8"] == f"{5e6 / 5.22e6:.2f}×" == "0.96×"
    assert s["cpu-omp×1/4"] == f"{3e6 / 5.22e6:.2f}×" == "0.57×"
    assert s["reference×1/1"] == f"{4e5 / 5.22e6:.2g}×" == "0.077×"
    assert "Speedups are against the fastest CPU configuration of this workload " \
           "(cpu-ddp ×2 (4 thr), 5.22 M samples/s)" in lin
    # The MLP workload has only cpu-omp at 8 threads besides the reference.
    assert "speedup vs fastest CPU: cpu-omp (8 thr)" in _section(html, MLP)


def test_a_cpu_row_another_beat_is_never_the_baseline(tmp_path):
    # The busy machine: cpu-omp at 8 threads ran slowest of the CPU rows.
    run = fx.write_run(tmp_path / "busy", "cpubox", speed={(LIN, OMP8): 0.1})
    s = _speedups(_section(_render(run), LIN))
    assert s["cpu-ddp×2/4"] == "1.00×"
    assert s["cpu-omp×1/8"] == f"{5e5 / 5.22e6:.2g}×" == "0.096×"
    cpu_rows = [v for k, v in s.items()]
    assert max(float(v.rstrip("×")) for v in cpu_rows) == 1.0   # no CPU row beats its baseline


def test_the_reference_is_excluded_even_when_fastest(tmp_path):
    run = fx.write_run(tmp_path / "fastref", "cpubox", speed={(LIN, REF): 100.0})   # 40M
    html = _render(run)
    s = _speedups(_section(html, LIN))
    assert s["reference×1/1"] == f"{4e7 / 5.22e6:.2f}×" == "7.66×"
    assert s["cpu-ddp×2/4"] == "1.00×"
    assert _glance(html)[LIN]["fastest CPU (the speedup baseline)"] == "cpu-ddp ×2 (4 thr) 5.22 M samples/s"


def test_a_cpu_row_that_failed_its_loss_check_is_not_the_baseline(tmp_path):
    run = fx.write_run(tmp_path / "wrong", "cpubox", loss_factor={(LIN, DDP2): 1.5})
    html = _render(run)
    lin = _section(html, LIN)
    assert "speedup vs fastest CPU: cpu-omp (8 thr)" in lin
    s = _speedups(lin)
    assert s["cpu-omp×1/8"] == "1.00×"
    assert s["cpu-ddp×2/4"] == f"{5.22 / 5:.2f}×" == "1.04×"
    row = _glance(html)[LIN]
    assert row["final loss vs reference"] == "✗ 1 MISMATCH: cpu-ddp ×2 (4 thr)"


def test_cpu_only_headline_says_no_gpu_ran_and_why(cpu_run):
    html = _render(cpu_run)
    top = _top(html)
    assert ("No GPU ran: this report compares CPU backends only. Why: no CUDA device "
            "(cudaGetDeviceCount: no CUDA-capable device is detected) (1 configuration(s) "
            "skipped); no CUDA device (2 configuration(s) skipped).") in " ".join(
                top.replace("<b>", "").replace("</b>", "").split())
    glance = _glance(html)
    assert list(glance) == [LIN, MLP]
    assert glance[LIN]["fastest CPU (the speedup baseline)"] == "cpu-ddp ×2 (4 thr) 5.22 M samples/s"
    assert glance[MLP]["fastest CPU (the speedup baseline)"] == "cpu-omp (8 thr) 40 k samples/s"
    assert "fastest single GPU" not in tables(top)[0][0]      # no GPU column at all
    assert glance[LIN]["final loss vs reference"] == "✓ all 4 checked match"
    # The headline (and its per-workload table) comes before any workload section.
    assert html.index('class="results glance"') < html.index(f"<h2>{LIN}</h2>")


def test_gpu_headline_speedups_and_efficiency(gpu_run):
    html = _render(gpu_run)
    assert "No GPU ran" not in html
    g = _glance(html)
    lin, mlp = g[LIN], g[MLP]
    t = fx.THROUGHPUT["gpubox"][LIN]
    assert lin["fastest CPU (the speedup baseline)"] == "cpu-omp (16 thr) 8 M samples/s"
    # cuda (200M) beats cuda-ddp ×1 (195M) and cuda-dp ×1 (190M) on one GPU.
    assert lin["fastest single GPU"] == "cuda (GPU 0) 200 M samples/s"
    assert cell(lin, "speedup vs fastest CPU") == f"{200e6 / 8e6:.2f}×" == "25.00×"
    assert lin["fastest multi-GPU"] == "cuda-ddp ×4 (GPU 0,1,2,3) 720 M samples/s"
    speedups = [v for k, v in lin.items() if "speedup vs fastest CPU" in k]
    assert speedups == ["25.00×", f"{720e6 / 8e6:.2f}×"] == ["25.00×", "90.00×"]
    eff = t[("cuda-ddp", 4, "0,1,2,3", 16)] / t[("cuda", 1, "0", 16)] / 4
    assert lin["scaling efficiency"] == f"{100 * eff:.1f}% vs cuda (GPU 0)" == "90.0% vs cuda (GPU 0)"
    # MLP: cuda 4M, cuda-ddp ×2 7M, cpu-omp 16 threads 90k; cuda-ddp ×4 was skipped.
    assert [v for k, v in mlp.items() if "speedup vs fastest CPU" in k] == \
        [f"{4e6 / 9e4:.2f}×", f"{7e6 / 9e4:.2f}×"] == ["44.44×", "77.78×"]
    assert mlp["scaling efficiency"] == f"{100 * 7 / 4 / 2:.1f}% vs cuda (GPU 0)" == "87.5% vs cuda (GPU 0)"


def test_shared_device_rows_are_not_the_fastest_multi_gpu(tmp_path, monkeypatch):
    monkeypatch.setitem(fx.THROUGHPUT["gpubox"][LIN], ("cuda-dp", 2, "0,0", 16), 900_000_000.0)
    g = _glance(_render(fx.write_run(tmp_path / "shared", "gpubox")))
    assert g[LIN]["fastest multi-GPU"] == "cuda-ddp ×4 (GPU 0,1,2,3) 720 M samples/s"


def test_shared_device_is_told_by_pci_bus_ids_where_rows_have_them(tmp_path, monkeypatch):
    # One GPU per task (srun --gpus-per-task=1): every rank sees its GPU as device 0, so
    # devices reads 0,0,0,0, yet the bus ids are four GPUs: the fastest multi-GPU row (the
    # headline skipped it as shared). Slots 0,1 on one bus id are one GPU: never picked.
    bound, slots = ("cuda-ddp", 4, "0,0,0,0", 16), ("cuda-dp", 2, "0,1", 16)
    monkeypatch.setitem(fx.THROUGHPUT["gpubox"][LIN], bound, 900_000_000.0)
    monkeypatch.setitem(fx.THROUGHPUT["gpubox"][LIN], slots, 950_000_000.0)
    buses = {(LIN, bound): {"gpu_bus_ids": "0000:1b:00.0,0000:3b:00.0,0000:5e:00.0,0000:86:00.0"},
             (LIN, slots): {"gpu_bus_ids": "0000:3b:00.0,0000:3b:00.0"}}
    g = _glance(_render(fx.write_run(tmp_path / "bound", "gpubox", settings=buses)))
    assert g[LIN]["fastest multi-GPU"] == "cuda-ddp ×4 (GPU 0,0,0,0) 900 M samples/s"


def test_skipped_rows_collapse_to_one_line_per_reason(tmp_path, monkeypatch):
    # 30 GPU configurations skipped for the same reason, as `make bench` on a CPU box.
    why = "skipped: no CUDA device (cudaGetDeviceCount: no CUDA-capable device is detected)"
    many = [(w, b, ws, ",".join(map(str, range(ws))), 4, why)
            for w in (LIN, MLP) for b in ("cuda", "cuda-dp", "cuda-ddp") for ws in (1, 2, 3, 4, 8)]
    assert len(many) == 30
    monkeypatch.setitem(fx.NOT_RUN, "cpubox", fx.NOT_RUN["cpubox"] + many)
    html = _render(fx.write_run(tmp_path / "many", "cpubox"))
    top = _top(html)
    assert "Skipped (33, by reason)" in top
    reason = why.removeprefix("skipped: ")
    assert f"<b>31×</b> {reason}" in top and "<b>2×</b> no CUDA device " in top
    assert top.count("<summary>") == 2                       # one line per reason
    # The rows are kept, folded into <details>, without repeating the reason.
    detail = top.split(f"<b>31×</b> {reason}", 1)[1].split("</details>", 1)[0]
    assert len(tables(detail)[0]) == 31 and "reason" not in tables(detail)[0][0]
    # Not repeated under every workload: one line pointing to the headline.
    lin = _section(html, LIN)
    assert reason not in lin
    assert "18 configuration(s) skipped" in lin and 'href="#skipped"' in lin


def test_disturbed_rows_are_marked_counted_and_named_in_the_headline(tmp_path):
    busy = {"disturbed": "true", "others_cpu_share": "0.31", "steal_share": "0"}
    quiet = {"disturbed": "false", "others_cpu_share": "0.01", "steal_share": "0"}
    settings = {(w, k): quiet for w, t in fx.THROUGHPUT["gpubox"].items() for k in t}
    settings[(LIN, GPU_OMP)] = busy
    run = fx.write_run(tmp_path / "busy", "gpubox", settings=settings)
    html = _render(run)
    top = " ".join(_top(html).split())
    assert "⚠ disturbed: 1 of 13 configuration(s)</b> (5 of 65 repetitions judged)" in top
    assert "Headline figures from disturbed rows:</b> linear-64x1-100k: cpu-omp (16 thr)." in top
    assert _glance(html)[LIN]["fastest CPU (the speedup baseline)"] == \
        "cpu-omp (16 thr) 8 M samples/s ⚠ disturbed"
    lin = _section(html, LIN)
    assert find_rows(lin, backend="cpu-omp ⚠ disturbed", threads="16")
    assert lin.count('<tr class="disturbed">') == 1
    assert 'title="5 of 5 judged repetition(s) disturbed; other processes took up to 31% of the CPU time' in lin
    assert "⚠ disturbed: cpu-omp (16 thr) — other processes" in lin
    assert "⚠ disturbed" not in _section(html, MLP)


def test_rows_without_disturbance_cells_are_not_marked(gpu_run):
    html = _render(gpu_run)
    assert "disturbed" not in _top(html) and 'class="disturbed"' not in html


def test_no_gpu_reason_from_env_json_when_no_gpu_row_was_asked_for(tmp_path):
    html = _render(fx.write_run(tmp_path / "cpuonly", "cpubox", not_run=False))
    top = " ".join(_top(html).replace("<b>", "").replace("</b>", "").split())
    assert ("No GPU ran: this report compares CPU backends only. Why: cudaGetDeviceCount: "
            "no CUDA-capable device is detected (env.json).") in top


def test_a_reference_with_other_workload_cells_checks_nothing(tmp_path):
    # The reference trained without a warm-up epoch: no row has a same-cells reference.
    run = fx.write_run(tmp_path / "refwarm", "cpubox",
                       settings={(w, ("reference", 1, "cpu", 1)): {"warmup": "0"} for w in (LIN, MLP)})
    html = _render(run)
    assert _glance(html)[LIN]["final loss vs reference"] == \
        "not checked (the reference trained other settings: workload cells differ)"
    assert "correctness not checked: no configuration has a reference row with the same " \
           "workload cells" in _top(html)


# --- rows that ran and failed are named as failed, never as absent --------------------

OOM = "failed: out of host memory (needs ~900 MiB, available 512 MiB)"


def test_a_failed_cpu_baseline_and_reference_are_named_failed_not_missing(tmp_path):
    """Every MLP CPU row failed: the headline said "no CPU row" and "no reference row"."""
    folder = fx.write_run(tmp_path / "f", "cpubox", status={(MLP, REF): OOM, (MLP, OMP8): OOM})
    html = _render(folder)
    glance = _glance(html)[MLP]
    why = "out of host memory (needs ~900 MiB, available 512 MiB)"
    # The fixture's cpu-ddp ×2 MLP row failed already: both reasons, one configuration each.
    assert glance["fastest CPU (the speedup baseline)"] == (
        f"CPU failed: 1× {why}; 1× rank 1 exited with signal 9 (Killed)")
    assert glance["final loss vs reference"] == f"not checked: the reference failed: 1× {why}"
    top = " ".join(_top(html).split())
    assert "no CPU row" not in top and "no reference" not in top
    assert f"(the reference failed: {MLP}: {why})" in top   # beside the LIN verdict
    section = _section(html, MLP)
    assert "No configuration of this workload produced results." in section  # cpu-ddp ×2 failed too
    assert "No CPU baseline: cpu-omp (8 thr), cpu-ddp ×2 (4 thr) failed (below)" in section
    assert "The reference failed (below): final losses are not checked." in section
    assert "No reference row" not in section and "No CPU baseline row" not in section


def test_a_reference_that_failed_everywhere_is_the_verdict(tmp_path):
    folder = fx.write_run(tmp_path / "f", "cpubox", status={(w, REF): OOM for w in (LIN, MLP)})
    top = " ".join(_top(_render(folder)).split())
    assert ("correctness not checked: the reference failed "
            f"({LIN}: out of host memory (needs ~900 MiB, available 512 MiB); {MLP}: out of host") in top
    assert "no reference rows" not in top


def test_gpu_rows_that_all_failed_are_why_no_gpu_ran(tmp_path):
    """The GPU ran and failed: the sentence said "no GPU backend was part of this run"."""
    gpu = {(w, k): "failed: CUDA error: no kernel image is available for execution on the device"
           for w, t in fx.THROUGHPUT["gpubox"].items() for k in t if k[2] != "cpu"}
    folder = fx.write_run(tmp_path / "g", "gpubox", status=gpu, not_run=False)
    top = " ".join(_top(_render(folder)).replace("<b>", "").replace("</b>", "").split())
    assert ("No GPU ran: this report compares CPU backends only. Why: CUDA error: no kernel image "
            f"is available for execution on the device ({len(gpu)} GPU configuration(s) failed).") in top
    assert "no GPU backend was part of this run" not in top
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as f:
        doc = json.load(f)["headline"]
    assert doc["gpu_ran"] is False and doc["gpu_failed_reasons"] == [
        {"reason": "CUDA error: no kernel image is available for execution on the device",
         "failed_configurations": len(gpu)}]


NOT_BUILT = "cpu-omp built without OpenMP (configure with -DTB_OPENMP=ON)"


def test_skipped_cpu_rows_are_named_skipped_with_why_not_missing(tmp_path):
    """The MLP's only CPU candidate was skipped: the headline said "no CPU row" (as it
    did for failed ones before), hiding that a CPU row was asked for and why it did not run."""
    folder = fx.write_run(tmp_path / "s", "cpubox", not_run=False,
                          status={(MLP, OMP8): f"skipped: {NOT_BUILT}"})
    html = _render(folder)
    assert _glance(html)[MLP]["fastest CPU (the speedup baseline)"] == f"CPU skipped: 1× {NOT_BUILT}"
    assert "no CPU row" not in " ".join(_top(html).split())
    section = _section(html, MLP)
    assert ('No CPU baseline: cpu-omp (8 thr) skipped (<a href="#skipped">reasons in the '
            "headline</a>): no speedup vs the CPU.") in section
    assert "No CPU baseline row" not in section
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as f:
        doc = {w["workload"]: w for w in json.load(f)["headline"]["workloads"]}
    assert doc[MLP]["cpu_skipped"] == [{"reason": NOT_BUILT, "count": 1}]
    assert doc[LIN]["cpu_skipped"] == [] and doc[MLP]["cpu_failed"] == []


def test_failed_and_skipped_cpu_rows_are_both_named(tmp_path):
    # The fixture's cpu-ddp ×2 MLP row failed; cpu-omp (8 thr) is skipped here.
    folder = fx.write_run(tmp_path / "fs", "cpubox", status={(MLP, OMP8): f"skipped: {NOT_BUILT}"})
    assert _glance(_render(folder))[MLP]["fastest CPU (the speedup baseline)"] == (
        f"CPU failed: 1× rank 1 exited with signal 9 (Killed)CPU skipped: 1× {NOT_BUILT}")  # <br>
