"""bench/peers/sgemm_rate.py (make perf's sgemm rate): every GEMM of the step at its
shape, in the step's order, with rates that follow from the recorded medians and a
step rate = sum of FLOPs / sum of median seconds. Skips without numpy."""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "bench", "peers", "sgemm_rate.py")


def test_every_step_gemm_with_rates_from_its_medians(tmp_path):
    pytest.importorskip("numpy")
    out = tmp_path / "sgemm.json"
    r = subprocess.run([sys.executable, SCRIPT, "--layers", "64,48,32", "--batch", "16", "--reps", "3",
                        "--threads", "1", "--out", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    j = json.loads(out.read_text())
    assert [(g["layer"], g["gemm"], g["m_n_k"]) for g in j["gemms"]] == [
        (1, "forward", "16x48x64"), (1, "dW", "48x64x16"),
        (2, "forward", "16x32x48"), (2, "dW", "32x48x16"), (2, "dA", "16x48x32")]
    flops = sum(g["gflops"] for g in j["gemms"])
    seconds = sum(g["median_s"] for g in j["gemms"])
    for g in j["gemms"]:
        assert g["gflops"] == pytest.approx(2 * 16 * 64 * 48 / 1e9 if g["layer"] == 1 else 2 * 16 * 48 * 32 / 1e9)
        assert g["gflop_per_s"] == pytest.approx(g["gflops"] / g["median_s"])
        assert g["min_gflop_per_s"] <= g["gflop_per_s"] <= g["max_gflop_per_s"]
    assert j["step_gflop_per_s"] == pytest.approx(flops / seconds)
    assert j["step_gemm_s"] == pytest.approx(seconds)
    assert j["threads"] == 1 and j["reps"] == 3
