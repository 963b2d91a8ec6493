"""`--target-loss` on the GPU backends without a GPU: cuda, cuda-dp (2 devices) and cuda-ddp
(2 ranks) on fake GPUs that compute on the host (the cuda_trace shim in execute mode, as in
test_gpu_suite_fake_gpus.py), beside cpu-omp, each evaluating mid-training after every
epoch until the target is reached.

The target sits halfway between `reference`'s evaluated loss after epochs 1 and 2 (a run
of k epochs' final_loss is that evaluation), so every backend must report target_epoch 2;
a target of 0 is never reached. What this shows: the evaluation between epochs leaves
training where it was (the final losses still match reference's) and the ranks of
cuda-ddp agree on the epoch. Times under the shim mean nothing and are not looked at.

Skipped, with the reason, where trainbench or the shim is missing. Run as:
TB_TRAINBENCH=build/trainbench /usr/bin/python3 -m pytest -q tests/bench/test_time_to_target_fake_gpus.py
"""

import csv
import io
import os
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRAINBENCH = os.environ.get("TB_TRAINBENCH", os.path.join(REPO, "build", "trainbench"))
SHIM = os.path.join(os.path.dirname(TRAINBENCH), "tests", "libtb_cuda_trace_shim.so")
WORKLOAD = "--model mlp --layers 16,24,4 --samples 512 --batch 32 --lr 0.2 --shuffle --warmup 1"
LOSS_RTOL = 1e-3  # README: matches reference


def _reference_loss(epochs):
    p = subprocess.run([TRAINBENCH, "run", "--backend", "reference", *WORKLOAD.split(), "--epochs", str(epochs),
                        "--reps", "1"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return float(next(csv.DictReader(io.StringIO(p.stdout)))["final_loss"])


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    if not os.path.exists(TRAINBENCH):
        pytest.skip(f"no trainbench at {TRAINBENCH} (build first, or set TB_TRAINBENCH)")
    if not os.path.exists(SHIM):
        pytest.skip(f"no fake-GPU shim at {SHIM} (built with the CUDA backends on Linux)")
    l1, l2 = _reference_loss(1), _reference_loss(2)
    assert l2 < l1 * 0.99, (l1, l2)
    target = (l1 + l2) / 2
    d = tmp_path_factory.mktemp("ttt-fake-gpus")
    suite = d / "ttt.suite"
    suite.write_text(
        f"defaults: {WORKLOAD} --epochs 3 --reps 1\n"
        f"mid: --backends reference,cpu-omp,cuda,cuda-ddp --world-sizes 2 --threads 1 --target-loss {target!r}\n"
        f"mid: --backends cuda-dp --devices 0,1 --target-loss {target!r}\n"
        "never: --backends cpu-omp,cuda --threads 1 --target-loss 0\n")
    env = dict(os.environ, LD_PRELOAD=SHIM, TB_FAKE_EXECUTE="1", TB_FAKE_GPUS="2", TB_TRACE_FILE="/dev/null",
               TMPDIR=str(d), CI="1")
    p = subprocess.run([TRAINBENCH, "suite", str(suite), "--out", str(d / "out")], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    with open(d / "out" / "results.csv", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_every_backend_reaches_the_target_at_epoch_two(rows):
    mid = [r for r in rows if r["workload"] == "mid"]
    assert {r["backend"] for r in mid} == {"reference", "cpu-omp", "cuda", "cuda-dp", "cuda-ddp"}
    ref = next(float(r["final_loss"]) for r in mid if r["backend"] == "reference")
    for r in mid:
        assert r["status"] == "ok", (r["backend"], r["status"])
        assert (r["target_reached"], r["target_epoch"]) == ("true", "2"), r["backend"]
        assert float(r["time_to_target_s"]) > 0, r["backend"]
        # The evaluations between epochs changed nothing the training computes.
        assert abs(float(r["final_loss"]) - ref) <= LOSS_RTOL * ref, (r["backend"], r["final_loss"], ref)
    assert {r["world_size"] for r in mid if r["backend"] in ("cuda-dp", "cuda-ddp")} == {"2"}


def test_an_unreachable_target_is_not_reached_on_the_gpu_either(rows):
    never = [r for r in rows if r["workload"] == "never"]
    assert {r["backend"] for r in never} == {"cpu-omp", "cuda"}
    for r in never:
        assert (r["status"], r["target_reached"], r["time_to_target_s"], r["target_epoch"]) == \
            ("ok", "false", "", ""), r["backend"]
