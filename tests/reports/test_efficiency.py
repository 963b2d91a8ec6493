"""Hardware efficiency (reports/efficiency.py): the FLOP and byte formulas against a naive
count, the four workloads of docs/performance.md, and the derived figures of fixture runs
against values computed by hand here — including a row faster than its ceiling, which
must read "ceiling under-measured" and never a percentage above 100.
"""

import math
import os
import re
from html import escape as html_escape

import numpy as np
import pytest

import efficiency as eff
import fixture_data as fx
import render
from htmltables import section as section_of, tables

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class Counter:
    """Counts the multiplies and adds of the matrix products it performs, one at a time."""

    def __init__(self):
        self.flops = 0

    def matmul(self, a, b):
        """a (n x k) @ b (k x m) as naive loops: k multiplies and k adds per output."""
        n, k = a.shape
        k2, m = b.shape
        assert k == k2
        out = np.zeros((n, m))
        for i in range(n):
            for j in range(m):
                s = 0.0
                for p in range(k):
                    s += a[i, p] * b[p, j]
                    self.flops += 2
                out[i, j] = s
        return out


def naive_step_flops(ws, batch, rng):
    """FLOPs of the products of one forward + backward pass of an MLP with widths ws on
    `batch` rows, counted while computing it (and checked against numpy's products)."""
    c = Counter()
    weights = [rng.standard_normal((ws[i + 1], ws[i])) for i in range(len(ws) - 1)]
    x = rng.standard_normal((batch, ws[0]))
    acts, a = [x], x
    for li, w in enumerate(weights):
        z = c.matmul(a, w.T)
        assert np.allclose(z, a @ w.T)
        a = np.maximum(z, 0) if li < len(weights) - 1 else z
        acts.append(a)
    dz = rng.standard_normal(a.shape)  # any upstream gradient: the count does not depend on it
    for li in range(len(weights) - 1, -1, -1):
        dw = c.matmul(dz.T, acts[li])            # weight gradient, every layer
        assert np.allclose(dw, dz.T @ acts[li])
        if li > 0:                               # the input needs no gradient
            da = c.matmul(dz, weights[li])
            dz = da * (acts[li] > 0)
    return c.flops


@pytest.mark.parametrize("ws", [[3, 1], [4, 5, 2], [3, 4, 5, 2]])
def test_flops_per_sample_equal_a_naive_count_of_the_products(ws):
    batch = 3
    counted = naive_step_flops(ws, batch, np.random.default_rng(7))
    assert eff.flops_per_sample(ws) * batch == counted


def test_param_count_equals_the_elements_of_weights_and_biases():
    ws = [5, 7, 3]
    arrays = [np.zeros((ws[i + 1], ws[i])) for i in range(2)] + [np.zeros(ws[i + 1]) for i in range(2)]
    assert eff.param_count(ws) == sum(a.size for a in arrays) == 5 * 7 + 7 + 7 * 3 + 3


def naive_epoch_bytes(ws, task, n, batch, drop_last, momentum):
    """Walks one epoch step by step: each row's input and target once, SGD's traffic per step."""
    params = eff.param_count(ws)
    target = 4 * ws[-1] if task == "regression" else 4
    total = rows = 0
    start = 0
    while start < n:
        r = min(batch, n - start)
        if r < batch and drop_last:
            break
        total += r * (4 * ws[0] + target)
        total += 4 * params * 3          # parameters read, gradients read, parameters written
        if momentum:
            total += 4 * params * 2      # momentum buffer read and written
        rows += r
        start += r
    return total / rows


@pytest.mark.parametrize("case", [
    ([64, 1], "regression", 100_000, 1024, False, 0.0),
    ([784, 256, 10], "classification", 60_000, 256, False, 0.9),
    ([8, 3], "regression", 1000, 64, True, 0.0),
    ([8, 3], "classification", 1000, 64, False, 0.0),
])
def test_bytes_per_sample_equal_a_naive_walk_of_the_epoch(case):
    ws, task, n, batch, drop_last, momentum = case
    got = eff.bytes_per_sample(ws, task, n, batch, drop_last, momentum)
    assert got == pytest.approx(naive_epoch_bytes(ws, task, n, batch, drop_last, momentum), rel=1e-12)


def test_the_four_workloads_agree_with_docs_performance_md():
    doc = open(os.path.join(REPO, "docs", "performance.md"), encoding="utf-8").read()
    # linear 64→1: the products only (the doc's ≈ 260 adds loss and bias gradient)
    assert eff.flops_per_sample([64, 1]) == 2 * 64 + 2 * 64 == 256
    assert "forward 2·64 + dW 2·64 (+ loss, db) ≈ 260" in doc
    assert eff.flops_per_sample([1024, 16]) == 65_536
    assert "2·1024·16 + dW 2·1024·16 = 65,536" in doc
    small = eff.flops_breakdown([784, 256, 256, 10])
    assert (small["forward"], small["weight_grad"], small["input_grad"]) == (537_600, 537_600, 136_192)
    assert small["total"] == 1_211_392
    assert "forward 2·268,800 = 537,600; dW 537,600; dA (layers 2, 3) 2·68,096 = 136,192; total 1.211 M" in doc
    large = eff.flops_breakdown([1024, 4096, 4096, 4096, 1000])
    assert large["forward"] == 2 * 41_844_736 and large["input_grad"] == 2 * 37_650_432
    assert f"total {large['total'] / 1e6:.1f} M" == "total 242.7 M"
    assert "total 242.7 M" in doc


def test_roofline_never_reports_above_100_percent_or_negative():
    roof, bound, frac, over = eff.roofline(50.0, 2.0, 100.0, 10.0)   # memory roof 20 < 100
    assert (roof, bound, over) == (20.0, "memory", True) and frac is None
    roof, bound, frac, over = eff.roofline(50.0, 100.0, 100.0, 10.0)
    assert (roof, bound, frac, over) == (100.0, "compute", 0.5, False)
    assert eff.roofline(-1.0, 1.0, 100.0, 10.0)[2] is None


def test_spec_sheet_by_device_name():
    assert eff.spec_sheet("NVIDIA H100 80GB HBM3")[0] == "H100 SXM"
    assert eff.spec_sheet("NVIDIA H100 PCIe")[0] == "H100 PCIe"
    assert eff.spec_sheet("NVIDIA H200")[1] == 67_000.0
    assert eff.spec_sheet("NVIDIA A100-SXM4-80GB")[3] == pytest.approx(2039.0)
    assert eff.spec_sheet("Tesla T4")[2] is None          # no TF32 on Turing
    assert eff.spec_sheet("NVIDIA H100 NVL") is None        # a variant not tabled: unknown
    assert eff.spec_sheet("NVIDIA GeForce RTX 4090") is None


# --- fixture runs ---------------------------------------------------------------------------

CPU_CEIL, GPU_CEIL = fx.CPU_CEILINGS, fx.GPU_CEILINGS


def _render(folder):
    assert render.main([str(folder)]) == 0
    with open(os.path.join(folder, "report.html"), encoding="utf-8") as f:
        return f.read()


def _eff_table(html):
    section = section_of(html, "efficiency")
    return [t for t in tables(section) if t and "% of roofline" in t[0]][0]


def _row(table, workload, label):
    rows = [r for r in table if r["workload"] == workload and r["configuration"] == label]
    assert len(rows) == 1, (workload, label, table)
    return rows[0]


def _num(text):
    return float(text.split()[0].replace(",", ""))


def lin_bytes():
    # 64 inputs + 1 target, 4 B each; 65 parameters; 100,000 rows in ceil(100000/1024) = 98 steps
    return 4 * 64 + 4 + 12 * 65 / (100_000 / 98)


def test_cpu_rows_match_hand_computation(tmp_path):
    folder = fx.write_run(tmp_path / "cpu", "cpubox", env_update={"ceilings": CPU_CEIL})
    table = _eff_table(_render(folder))
    # cpu-omp at 8 threads, linear 64→1 at 5e6 samples/s: the all-thread ceilings
    r = _row(table, fx.LINEAR, "cpu-omp (8 thr)")
    flops, nbytes = 256.0, lin_bytes()
    gflops, gbs = flops * 5e6 / 1e9, nbytes * 5e6 / 1e9
    assert _num(r["FLOP per sample"]) == 256
    assert _num(r["bytes per sample"]) == pytest.approx(nbytes, rel=1e-3)
    assert _num(r["achieved GFLOP/s"]) == pytest.approx(gflops, rel=1e-3)
    assert _num(r["achieved GB/s"]) == pytest.approx(gbs, rel=1e-3)
    assert (_num(r["compute ceiling GFLOP/s"]), _num(r["memory ceiling GB/s"])) == (700, 40)
    roof = min(700.0, flops / nbytes * 40.0)
    assert r["roofline GFLOP/s (bound)"].endswith("(memory)")
    assert r["% of roofline"] == f"{100 * gflops / roof:.1f}%"
    # 4 threads of 8: linear between the one-core and all-thread figures
    r4 = _row(table, fx.LINEAR, "cpu-omp (4 thr)")
    assert _num(r4["compute ceiling GFLOP/s"]) == pytest.approx(100 + 600 * 3 / 7, rel=1e-3)
    assert _num(r4["memory ceiling GB/s"]) == pytest.approx(10 + 30 * 3 / 7, rel=1e-3)
    # cpu-ddp ×2 at 4 threads each: 8 threads, the all-thread figures
    r2 = _row(table, fx.LINEAR, "cpu-ddp ×2 (4 thr)")
    assert _num(r2["compute ceiling GFLOP/s"]) == 700
    # the float64 reference has no fp32 ceiling
    ref = _row(table, fx.LINEAR, "reference (1 thr)")
    assert ref["% of roofline"] == "–" and "fp64" in ref["note"]
    assert "Roofline of CPU AMD EPYC 7B13 (cpubox)" in _render(folder)


def test_gpu_rows_sum_their_gpus_and_tf32_uses_the_tf32_rate(tmp_path, monkeypatch):
    key = (fx.MLP, ("cuda", 1, "0", 16))
    folder = fx.write_run(tmp_path / "gpu", "gpubox", env_update={"ceilings": GPU_CEIL},
                          settings={key: {"precision": "tf32"}})
    table = _eff_table(_render(folder))
    # MLP 784-256-10 classification: products 784·256 + 256·10 = 203,264
    flops = 2 * 203_264 + 2 * 203_264 + 2 * 2_560
    assert _num(_row(table, fx.MLP, "cuda (GPU 0)")["FLOP per sample"]) == flops
    cuda = _row(table, fx.MLP, "cuda (GPU 0)")
    assert (_num(cuda["compute ceiling GFLOP/s"]), _num(cuda["memory ceiling GB/s"])) == (400_000, 3000)
    ddp = _row(table, fx.MLP, "cuda-ddp ×2 (GPU 0,1)")
    assert (_num(ddp["compute ceiling GFLOP/s"]), _num(ddp["memory ceiling GB/s"])) == (100_000, 6000)
    nbytes = 4 * 784 + 4 + 12 * (785 * 256 + 257 * 10) / (60_000 / math.ceil(60_000 / 256))
    gflops = flops * 7e6 / 1e9
    roof = min(100_000.0, flops / nbytes * 6000.0)
    assert ddp["% of roofline"] == f"{100 * gflops / roof:.1f}%"


def test_a_row_faster_than_its_ceiling_says_under_measured_never_above_100(tmp_path):
    low = dict(CPU_CEIL, cpu=dict(CPU_CEIL["cpu"], triad_gbs=0.5, triad_gbs_1core=0.1))
    folder = fx.write_run(tmp_path / "cpu", "cpubox", env_update={"ceilings": low})
    html = _render(folder)
    table = _eff_table(html)
    r = _row(table, fx.LINEAR, "cpu-omp (8 thr)")
    assert r["% of roofline"] == "ceiling under-measured"
    assert "ceiling under-measured: achieved" in r["note"]
    for row in table:
        m = re.fullmatch(r"([\d.]+)%", row["% of roofline"])
        if m:
            assert 0.0 <= float(m.group(1)) <= 100.0, row


def test_omitted_or_missing_ceilings_say_why_and_draw_no_roofline(tmp_path):
    a = fx.write_run(tmp_path / "a", "cpubox", env_update={"ceilings": {"omitted": "--no-ceilings"}})
    html = _render(a)
    r = _row(_eff_table(html), fx.LINEAR, "cpu-omp (8 thr)")
    assert r["% of roofline"] == "–" and r["note"] == "ceilings not measured: --no-ceilings"
    assert _num(r["FLOP per sample"]) == 256      # the model's figures need no ceiling
    assert "Roofline of" not in html
    b = fx.write_run(tmp_path / "b", "cpubox")
    r = _row(_eff_table(_render(b)), fx.LINEAR, "cpu-omp (8 thr)")
    assert "no ceilings in env.json" in r["note"]


@pytest.mark.parametrize("ceilings, why", [
    ("fast", 'ceilings is a string ("fast"), not an object'),
    ({"cpu": dict(CPU_CEIL["cpu"], threads="8")}, 'ceilings.cpu.threads is a string ("8"), not an integer'),
    (dict(CPU_CEIL, gpus=[{"index": [0]}]), "ceilings.gpus[0].index is a list ([0]), not an integer"),
])
def test_malformed_ceilings_are_ignored_with_a_note_not_a_traceback(tmp_path, ceilings, why):
    """Ceilings are optional measurements: a hand-edited env.json whose ceilings have the
    wrong types renders without them, saying why (it raised AttributeError/TypeError)."""
    folder = fx.write_run(tmp_path / "cpu", "cpubox", env_update={"ceilings": ceilings})
    html = _render(folder)
    r = _row(_eff_table(html), fx.LINEAR, "cpu-omp (8 thr)")
    assert r["% of roofline"] == "–" and r["note"] == f"ceilings in env.json ignored: {why}"
    assert html_escape(f"{folder}/env.json: {why}: the measured ceilings are ignored") in html  # headline
    assert "Roofline of" not in html


def test_ceilings_of_another_host_are_not_used(tmp_path):
    other = dict(CPU_CEIL, host="elsewhere")
    folder = fx.write_run(tmp_path / "cpu", "cpubox", env_update={"ceilings": other})
    r = _row(_eff_table(_render(folder)), fx.LINEAR, "cpu-omp (8 thr)")
    assert r["note"] == "ceilings measured on elsewhere, not on cpubox"


def test_figures_for_summary_json(tmp_path):
    import derive
    from load import load_runs
    folder = fx.write_run(tmp_path / "cpu", "cpubox", env_update={"ceilings": CPU_CEIL})
    out = eff.figures(derive.summarize(load_runs([str(folder)])))
    assert out["units"]["achieved_gflops"] == "1e9 FLOP/s"
    rows = {(c["workload"], c["label"]): c for c in out["configurations"]}
    c = rows[(fx.LINEAR, "cpu-omp (8 thr)")]
    assert c["flops_per_sample"] == 256.0
    assert c["achieved_gflops"] == pytest.approx(256 * 5e6 / 1e9)
    assert 0 < c["percent_of_roofline"] <= 100 and c["bound"] == "memory"
    assert rows[(fx.LINEAR, "reference (1 thr)")]["percent_of_roofline"] is None
    assert out["ceilings"][fx.run_id("cpubox")]["cpu"]["fma_gflops_all"] == 700.0
