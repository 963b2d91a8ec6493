"""NVML columns in the report: samples per joule (README formula: samples_per_s ×
train_time_s / gpu_energy_j, median over repetitions) and the throttled flag for a row
that saw a power or thermal clocks-event reason; rows without NVML figures (CPU rows,
files written before the columns existed) show neither.
"""

import json
import os

import derive
import fixture_data as fx
import fmt
import render
from htmltables import cell, find_rows
from load import load_run

LIN = fx.LINEAR
CUDA = ("cuda", 1, "0", 16)
DP2 = ("cuda-dp", 2, "0,1", 16)
ENERGY_J = [40.0, 52.0, 47.0, 61.0, 45.0]          # per repetition of cuda in LIN
REASONS = ["none", "none", "sw_power_cap", "none", "gpu_idle"]


def _write(folder, dp_reasons="hw_thermal_slowdown|gpu_idle", drop_columns=()):
    os.makedirs(folder, exist_ok=True)
    rows, curves = fx.build_rows("gpubox")
    for r in rows:
        r.setdefault("gpu_energy_j", "")
        r.setdefault("gpu_throttle_reasons", "")
        if r["workload"] == LIN and r["status"] == "ok":
            key = (r["backend"], r["world_size"], r["devices"], r["threads"])
            if key == CUDA:
                r["gpu_energy_j"] = repr(ENERGY_J[r["repetition"]])
                r["gpu_throttle_reasons"] = REASONS[r["repetition"]]
            elif key == DP2:
                r["gpu_energy_j"] = "30.5"
                r["gpu_throttle_reasons"] = dp_reasons
    columns = [c for c in fx.RESULT_COLUMNS if c not in drop_columns]
    for r in rows:
        for c in drop_columns:
            r.pop(c, None)
    fx.write_csv(os.path.join(folder, "results.csv"), columns, rows)
    fx.write_csv(os.path.join(folder, "curves.csv"), fx.CURVE_COLUMNS, curves)
    with open(os.path.join(folder, "env.json"), "w", encoding="utf-8") as f:
        json.dump(fx.env_for("gpubox"), f)
    return str(folder), rows


def _median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _lin(html):
    return html.split(f"<h2>{LIN}</h2>", 1)[1].split("<h2>", 1)[0]


def test_samples_per_joule_and_the_throttled_flag(tmp_path):
    folder, rows = _write(tmp_path / "run")
    cuda_rows = [r for r in rows if r["workload"] == LIN and r["backend"] == "cuda" and r["status"] == "ok"]
    want = _median([float(r["samples_per_s"]) * float(r["train_time_s"]) / ENERGY_J[r["repetition"]]
                    for r in cuda_rows])
    lin = next(w for w in derive.summarize([load_run(folder)]).workloads if w.name == LIN)
    cuda = next(g for g in lin.groups if g.backend == "cuda")
    assert abs(cuda.samples_per_joule - want) <= 1e-9 * want
    # One repetition at the power cap flags the configuration; gpu_idle alone does not.
    assert cuda.throttled == "power"
    dp = next(g for g in lin.groups if g.backend == "cuda-dp" and g.world_size == 2)
    assert dp.throttled == "thermal"
    omp = next(g for g in lin.groups if g.backend == "cpu-omp")
    assert omp.samples_per_joule is None and omp.throttled == ""

    assert render.main([folder]) == 0
    with open(os.path.join(folder, "report.html"), encoding="utf-8") as f:
        html = _lin(f.read())
    row = find_rows(html, backend="cuda")[0]
    assert cell(row, "samples/J") == fmt.sps(want)
    assert cell(row, "GPU throttled").startswith("⚠ power")
    assert cell(find_rows(html, backend="cpu-omp")[0], "GPU throttled") == "–"
    assert "GPU throttled: cuda" in html


def test_throttle_kinds():
    assert derive.throttle_kinds("none") == ""
    assert derive.throttle_kinds("gpu_idle|applications_clocks") == ""
    assert derive.throttle_kinds("sw_power_cap") == "power"
    assert derive.throttle_kinds("hw_power_brake_slowdown") == "power"
    assert derive.throttle_kinds("sw_thermal_slowdown|gpu_idle") == "thermal"
    assert derive.throttle_kinds("hw_slowdown") == "power/thermal"
    assert derive.throttle_kinds("") == "" and derive.throttle_kinds(None) == ""


def test_no_nvml_columns_no_energy_column(tmp_path):
    folder, _ = _write(tmp_path / "old", drop_columns=[c for c in fx.RESULT_COLUMNS if c.startswith("gpu_")])
    assert render.main([folder]) == 0
    with open(os.path.join(folder, "report.html"), encoding="utf-8") as f:
        html = f.read()
    assert "samples/J" not in _lin(html) and "GPU throttled" not in html
