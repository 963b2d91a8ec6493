"""PyTorch as an external oracle: an exported workload trained by
bench/peers/pytorch_train.py (float32, torch.optim.SGD) ends with the parameters
and final loss of trainbench's float64 `reference` backend on the same workload:
shuffled batches, a short last batch, drop_last, momentum, weight decay, MSE and
cross-entropy, linear and MLP.

Tolerances: float32 against float64 over 10-20 SGD steps drifts by ~1e-6
relative; parameters must agree within 2e-4 relative (1e-2 absolute floor for
values near zero) and the final loss within 1e-4 relative — the bounds the
foundation tests hold cpu-omp to against `reference`. A wrong batch order, a
missing momentum term or a loss averaged over the wrong count moves them by
orders of magnitude more.
"""

import numpy as np
import pytest

from peer_helpers import peer, rows, run, torch, trainbench  # noqa: F401, F811 (fixtures used by name)

CASES = {
    "linear-reg-shuffle-momentum-wd":
        "--model linear --layers 16,3 --samples 300 --batch 64 --epochs 3 --lr 0.05 "
        "--momentum 0.9 --weight-decay 0.001 --shuffle --seed 7",
    "mlp-cls-shuffle-momentum":
        "--model mlp --layers 12,32,5 --samples 257 --batch 50 --epochs 3 --lr 0.2 "
        "--momentum 0.9 --shuffle --seed 3",
    "mlp-reg-drop-last":
        "--model mlp --layers 10,24,16,2 --dataset synthetic-regression --samples 230 --batch 40 "
        "--epochs 2 --lr 0.05 --weight-decay 0.0001 --drop-last --seed 11",
}
PARAM_RTOL, PARAM_FLOOR, LOSS_RTOL = 2e-4, 1e-2, 1e-4


def params(path):
    with open(path, "rb") as f:
        assert f.read(8) == b"TBPARAM1"
    return np.fromfile(path, "<f4", offset=16).astype(np.float64)


@pytest.mark.parametrize("name", sorted(CASES))
def test_pytorch_matches_reference(name, tmp_path, trainbench, torch):
    flags = CASES[name].split()
    out = tmp_path / "r.csv"
    run([trainbench, "run", "--backend", "reference", *flags, "--warmup", "0", "--reps", "1",
         "--save-params", tmp_path / "ref.bin", "--out", out])
    run([trainbench, "export", *flags, "--out", tmp_path / "export"])
    peer(tmp_path / "export", "--results", out, "--devices", "cpu", "--threads", "1",
         "--warmup", "1", "--reps", "2", "--save-params", tmp_path / "torch.bin")

    ref, tp = params(tmp_path / "ref.bin"), params(tmp_path / "torch.bin")
    assert ref.shape == tp.shape
    rel = np.max(np.abs(tp - ref) / (np.abs(ref) + PARAM_FLOOR))
    print(f"{name}: max rel param err {rel:.3g}")
    assert rel < PARAM_RTOL, f"parameters differ: max rel err {rel:.3g}"

    by = {}
    for r in rows(out):
        by.setdefault(r["backend"], []).append(r)
    assert [r["status"] for r in by["torch-cpu"]] == ["ok", "ok"]
    r_ref = by["reference"][0]
    timed_s = 0.0  # the torch-cpu repetitions' epochs so far
    for r in by["torch-cpu"]:  # every repetition restarts from the same init
        for col in ("workload", "run_id", "model", "layers", "task", "n_samples", "batch_size",
                    "epochs", "lr", "momentum", "weight_decay", "seed"):
            assert r[col] == r_ref[col], col
        assert r["precision"] == "fp32" and r["threads"] == "1" and r["devices"] == "cpu"
        lr, lt = float(r_ref["final_loss"]), float(r["final_loss"])
        assert abs(lt - lr) <= LOSS_RTOL * max(1.0, abs(lr)), (lt, lr)
        if r_ref["final_accuracy"]:
            assert abs(float(r["final_accuracy"]) - float(r_ref["final_accuracy"])) <= 2.0 / int(
                r_ref["n_samples"])
        assert abs(float(r["param_checksum"]) - ref.sum()) <= 1e-3 * max(1.0, np.abs(ref).sum())
        assert float(r["samples_per_s"]) > 0 and float(r["train_time_s"]) > 0
        # Who else used the CPUs over its epochs, as the harness's rows say it (Linux: /proc/stat),
        # or nobody can tell: every timed epoch so far lasted under 0.5 s together (10 ms ticks).
        timed_s += float(r["train_time_s"])
        if r["others_cpu_share"] == "":
            assert r["steal_share"] == r["disturbed"] == "" and timed_s < 0.5, r
            continue
        others, steal = float(r["others_cpu_share"]), float(r["steal_share"])
        assert 0 <= others <= 1 and 0 <= steal <= 1, (others, steal)
        assert r["disturbed"] == ("true" if max(others, steal) > 0.05 else "false")


def test_pytorch_and_reference_both_fail_a_run_that_diverges_while_finite(tmp_path, trainbench, torch):
    """A learning rate far too large: the loss ends finite (~1e19) but above where it started.
    Both sides record `failed: diverged: ...` (the peer by harness/runner.cpp's rule), never ok."""
    flags = "--model linear --layers 16,1 --samples 2000 --batch 128 --epochs 2 --lr 1.5".split()
    out = tmp_path / "r.csv"
    run([trainbench, "run", "--backend", "reference", *flags, "--warmup", "0", "--reps", "1", "--out", out], expect=1)
    run([trainbench, "export", *flags, "--out", tmp_path / "export"])
    peer(tmp_path / "export", "--results", out, "--devices", "cpu", "--threads", "1",
         "--warmup", "0", "--reps", "2", expect=1)
    statuses = {r["backend"]: r["status"] for r in rows(out)}
    for backend in ("reference", "torch-cpu"):
        assert statuses[backend].startswith("failed: diverged: final loss "), statuses
        assert "is over twice the loss before training" in statuses[backend], statuses
