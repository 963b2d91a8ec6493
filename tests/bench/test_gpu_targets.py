"""bench/gpu_targets.py on hand-made results: a GPU run's rows and micro-benchmark
JSON with numbers chosen so each target's ratio is known exactly; missing inputs
give '–' rows, not a crash; bad input exits 2.

Run as: /usr/bin/python3 -m pytest -q tests/bench
"""

import csv
import json
import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(REPO, "bench", "gpu_targets.py")
COLUMNS = ["workload", "backend", "layers", "n_samples", "batch_size", "epochs", "precision", "world_size",
           "train_time_s", "samples_per_s", "status"]
BIG = "1024,4096,4096,4096,1000"


def row(workload, backend, layers, n, batch, epochs, t, sps, world=1, precision="fp32", status="ok"):
    return dict(zip(COLUMNS, [workload, backend, layers, n, batch, epochs, precision, world, t, sps, status]))


def bench_entry(name, seconds, bytes_per_second=None):
    e = {"name": name + "/manual_time", "run_type": "iteration", "real_time": seconds * 1e6, "time_unit": "us"}
    if bytes_per_second is not None:
        e["bytes_per_second"] = bytes_per_second
    return e


def write(folder, rows, benches):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "results.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    if benches is not None:
        with open(os.path.join(folder, "microbench_cuda.json"), "w", encoding="utf-8") as f:
            json.dump({"benchmarks": benches}, f)


def run(folder):
    return subprocess.run([sys.executable, SCRIPT, str(folder)], capture_output=True, text=True)


def test_targets_are_computed_from_rows_and_micro_benchmarks(tmp_path):
    # Large MLP: 65536 rows, batch 1024, 3 epochs = 192 steps. The step's GEMMs: 4 fwd,
    # 4 dW, 3 dA; every GEMM is given 1 ms, so the sum is 11 ms; a step of 12.1 ms
    # (train time 192 x 12.1 ms) is 1.1x. The 4096x4096 shapes appear twice in the step
    # but once in the micro-benchmarks.
    gemms = [("fwd", "NT", 1024, 4096, 1024), ("dW", "TN", 4096, 1024, 1024),
             ("fwd", "NT", 1024, 4096, 4096), ("dW", "TN", 4096, 4096, 1024), ("dA", "NN", 1024, 4096, 4096),
             ("fwd", "NT", 1024, 1000, 4096), ("dW", "TN", 1000, 4096, 1024), ("dA", "NN", 1024, 4096, 1000)]
    benches = [bench_entry(f"BM_gemm_cuda/mlp-1024x4096x4096x4096x1000/fp32/{r}/{o}/{m}x{n}x{k}", 1e-3)
               for r, o, m, n, k in gemms]
    # Copy bandwidth 2e12 B/s (the fastest size); linear 64 -> 1 at 5e9 samples/s x 65 x 4 B
    # = 1.3e12 B/s = 65%.
    benches += [bench_entry("BM_memcpy_cuda/d2d/1048576", 1e-5, 1.0e12),
                bench_entry("BM_memcpy_cuda/d2d/268435456", 1e-3, 2.0e12)]
    rows = [row("mlp-1024x4096x4096x4096x1000-64k", "cuda", BIG, 65536, 1024, 3, 192 * 12.1e-3, 1, status="ok"),
            row("mlp-1024x4096x4096x4096x1000-64k", "cuda", BIG, 65536, 1024, 3, 192 * 12.3e-3, 1),
            row("mlp-1024x4096x4096x4096x1000-64k", "cuda", BIG, 65536, 1024, 3, 192 * 11.9e-3, 1),
            row("mlp-1024x4096x4096x4096x1000-64k", "cuda", BIG, 65536, 1024, 3, 1e-3, 1, precision="tf32"),
            row("linear-64x1-16M-b1M-graph", "cuda", "64,1", 16777216, 1048576, 3, 1, 5e9),
            row("weak-mlp-1024x4096x4096x4096x1000-x1", "cuda-ddp", BIG, 32768, 1024, 2, 1, 1000),
            row("weak-mlp-1024x4096x4096x4096x1000-x8", "cuda-ddp", BIG, 262144, 8192, 2, 1, 7000, world=8)]
    write(tmp_path, rows, benches)
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "= 1.100 (target <= 1.25) | yes |" in lines[2], lines[2]  # the tf32 row is not the fp32 target
    assert "= 65% (target >= 60%) | yes |" in lines[3], lines[3]
    assert "= 87.5% (target >= 90%) | NO |" in lines[4], lines[4]
    assert (tmp_path / "gpu_targets.md").read_text() == r.stdout


def test_missing_inputs_are_dashes_not_a_crash(tmp_path):
    write(tmp_path, [row("mlp-1024x4096x4096x4096x1000-64k", "cuda", BIG, 65536, 1024, 3, 1, 1,
                         status="skipped: no GPU")], None)
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("| – |") == 3, r.stdout


def test_bad_input_exits_2(tmp_path):
    r = run(tmp_path / "nowhere")
    assert r.returncode == 2 and "results.csv" in r.stderr
    write(tmp_path, [], None)
    (tmp_path / "microbench_cuda.json").write_text("{not json")
    r = run(tmp_path)
    assert r.returncode == 2 and "unreadable" in r.stderr
