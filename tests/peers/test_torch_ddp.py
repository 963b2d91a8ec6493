"""torch-dp and torch-ddp peers (bench/peers/pytorch_train.py, launched for ddp by
torchrun as bench/peers/run_peers.py does).

torch-ddp over gloo with 2 CPU processes trains each rank's shard of every global
batch (harness/ddp_plan.cpp shard_of) with the loss scaled by local_rows * N / B, so
DDP's averaged gradient is the global-batch mean: its final parameters and loss
must match trainbench's `reference` within the oracle test's tolerances. The case
has a short last batch split unevenly over the ranks (257 rows, batch 50: 7 rows,
4 + 3), shuffling, momentum and weight decay.

torch-dp needs 2 GPUs; without them it writes a `skipped:` row saying why.

Two torch-ddp launches on one machine at the same time (each with its own
rendezvous port) both finish and write their rows.
"""

import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from peer_helpers import PEERS, peer, rows, run, torch, trainbench  # noqa: F401, F811 (fixtures used by name)
from test_pytorch_oracle import LOSS_RTOL, PARAM_FLOOR, PARAM_RTOL, params

sys.path.insert(0, PEERS)
import run_peers  # noqa: E402

FLAGS = ("--model mlp --layers 12,32,5 --samples 257 --batch 50 --epochs 3 --lr 0.2 "
         "--momentum 0.9 --weight-decay 0.001 --shuffle --seed 3").split()
REG_FLAGS = ("--model linear --layers 16,3 --dataset synthetic-regression --samples 301 --batch 64 "
             "--epochs 2 --lr 0.05 --momentum 0.9 --seed 7").split()


@pytest.fixture(scope="module")
def gloo(torch):
    if not (torch.distributed.is_available() and torch.distributed.is_gloo_available()):
        pytest.skip(f"torch {torch.__version__}: torch.distributed with gloo not available")
    if not shutil.which("torchrun"):
        try:
            import torch.distributed.run  # noqa: F401, PLC0415
        except Exception as e:  # noqa: BLE001
            pytest.skip(f"neither torchrun on PATH nor torch.distributed.run importable ({e})")
    return True


sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "reports"))
from load import COLUMN, RESULT_COLUMNS  # noqa: E402

REQUIRED = [c for c in RESULT_COLUMNS if not COLUMN[c]["nullable"]]  # in every ok row


@pytest.mark.parametrize("flags", [FLAGS, REG_FLAGS], ids=["mlp-cls-uneven", "linear-reg-mse"])
def test_torch_ddp_gloo_matches_reference(flags, tmp_path, trainbench, torch, gloo):
    out = tmp_path / "r.csv"
    run([trainbench, "run", "--backend", "reference", *flags, "--warmup", "0", "--reps", "1",
         "--save-params", tmp_path / "ref.bin", "--out", out])
    run([trainbench, "export", *flags, "--out", tmp_path / "export"])
    cmd = [*run_peers.launcher(sys.executable, 2), os.path.join(PEERS, "pytorch_train.py"),
           tmp_path / "export", "--results", out, "--devices", "ddp", "--ddp-backend", "gloo",
           "--threads", "1", "--warmup", "1", "--reps", "2", "--save-params", tmp_path / "ddp.bin"]
    run(cmd)

    ref, tp = params(tmp_path / "ref.bin"), params(tmp_path / "ddp.bin")
    assert ref.shape == tp.shape
    rel = np.max(np.abs(tp - ref) / (np.abs(ref) + PARAM_FLOOR))
    assert rel < PARAM_RTOL, f"parameters differ: max rel err {rel:.3g}"

    all_rows = rows(out)
    r_ref = [r for r in all_rows if r["backend"] == "reference"][0]
    ddp = [r for r in all_rows if r["backend"] == "torch-ddp"]
    assert [r["status"] for r in ddp] == ["ok", "ok"]  # rank 0 only: one row per repetition
    assert [r["repetition"] for r in ddp] == ["0", "1"]
    for r in ddp:
        assert r["world_size"] == "2" and r["devices"] == "cpu" and r["threads"] == "1"
        for col in ("workload", "run_id", "model", "layers", "n_samples", "batch_size", "epochs", "lr"):
            assert r[col] == r_ref[col], col
        lr, lt = float(r_ref["final_loss"]), float(r["final_loss"])
        assert abs(lt - lr) <= LOSS_RTOL * max(1.0, abs(lr)), (lt, lr)
        assert int(r["allreduce_bytes_per_step"]) == 4 * ref.size
        assert float(r["samples_per_s"]) > 0
        # The report's contract: every non-nullable cell is filled in an ok row; the
        # traits say what the peer is (reports never read backend names).
        for col in REQUIRED:
            assert r[col] != "", f"{col} empty in an ok torch-ddp row"
        assert (r["implementation"], r["device_kind"], r["parallelism"], r["scaling_base"]) == \
            ("pytorch", "cpu", "ddp", "torch-cpu")
        assert r["schema_version"] == r_ref["schema_version"] == "2"
        assert (r["shuffle"], r["warmup"]) == (r_ref["shuffle"], "1")
    with open(out, encoding="utf-8") as f:
        header = f.readline()
    assert header.startswith("schema_version,") and "torch-ddp" not in header


def test_torch_dp_without_two_gpus_writes_a_skipped_row(tmp_path, trainbench, torch):
    if torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        pytest.skip("this machine has 2+ GPUs: torch-dp runs instead of skipping")
    out = tmp_path / "r.csv"
    run([trainbench, "run", "--backend", "reference", *FLAGS, "--warmup", "0", "--reps", "1", "--out", out])
    run([trainbench, "export", *FLAGS, "--out", tmp_path / "export"])
    text = peer(tmp_path / "export", "--results", out, "--devices", "dp")
    dp = [r for r in rows(out) if r["backend"] == "torch-dp"]
    assert len(dp) == 1
    assert dp[0]["status"].startswith("skipped: torch.nn.DataParallel needs 2 GPUs, torch sees "), dp[0]["status"]
    assert dp[0]["samples_per_s"] == "" and dp[0]["final_loss"] == ""
    assert "torch-dp" in text and "skipped:" in text


def test_torch_ddp_nccl_without_gpus_writes_a_skipped_row(tmp_path, trainbench, torch):
    if torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        pytest.skip("this machine has 2+ GPUs")
    out = tmp_path / "r.csv"
    run([trainbench, "run", "--backend", "reference", *FLAGS, "--warmup", "0", "--reps", "1", "--out", out])
    run([trainbench, "export", *FLAGS, "--out", tmp_path / "export"])
    peer(tmp_path / "export", "--results", out, "--devices", "ddp", "--ddp-backend", "nccl",
         "--world-size", "2")
    ddp = [r for r in rows(out) if r["backend"] == "torch-ddp"]
    assert len(ddp) == 1 and ddp[0]["world_size"] == "2"
    assert ddp[0]["status"].startswith("skipped: "), ddp[0]["status"]


def test_run_peers_plans_ddp_runs_from_the_suite_entry(monkeypatch):
    class Args:
        python, devices = "/usr/bin/python3", "auto"
    script = os.path.join(PEERS, "pytorch_train.py")
    monkeypatch.setattr(run_peers, "torch_importable", lambda python: True)
    _, lists = run_peers.split_flags("--backends cpu-ddp --world-sizes 1,2 --threads 1".split())
    runs = run_peers.peer_runs(Args, ["cpu-ddp"], lists, None)
    assert len(runs) == 2  # no torch-cpu run: the entry runs no cpu-omp
    for n, cmd in zip((1, 2), runs):
        assert cmd[cmd.index("--nproc_per_node") + 1] == str(n)
        assert cmd[cmd.index("--no_python") + 1] == "/usr/bin/python3"
        # Its own rendezvous on a free local port, not --standalone's fixed 29400.
        assert "--standalone" not in cmd and cmd[cmd.index("--nnodes") + 1] == "1"
        assert cmd[cmd.index("--rdzv_backend") + 1] == "c10d"
        host, port = cmd[cmd.index("--rdzv_endpoint") + 1].split(":")
        assert host == "127.0.0.1" and 0 < int(port) < 65536
        assert cmd[cmd.index(script) + 1:] == ["--threads", "1", "--devices", "ddp", "--ddp-backend", "gloo",
                                               "--world-size", str(n)]
    _, lists = run_peers.split_flags("--backends cpu-ddp".split())
    (cmd,) = run_peers.peer_runs(Args, ["cpu-ddp"], lists, None)
    assert cmd[cmd.index("--nproc_per_node") + 1] == "2"  # default world size
    # Without torch nothing is launched under torchrun: the script alone writes a skipped row.
    monkeypatch.setattr(run_peers, "torch_importable", lambda python: False)
    (cmd,) = run_peers.peer_runs(Args, ["cpu-ddp"], lists, None)
    assert cmd == ["/usr/bin/python3", script, "--devices", "ddp", "--ddp-backend", "gloo", "--world-size", "2"]
    _, lists = run_peers.split_flags("--backends reference,cpu-omp --threads 1,all".split())
    (cmd,) = run_peers.peer_runs(Args, ["reference", "cpu-omp"], lists, None)
    assert "--no_python" not in cmd and cmd[cmd.index("--devices") + 1] == "auto"


def with_value(flags, flag, value):
    """flags with flag's value replaced: trainbench refuses a flag given twice."""
    i = flags.index(flag)
    return flags[:i + 1] + [value] + flags[i + 2:]


def test_two_torch_ddp_peer_runs_at_once(tmp_path, trainbench, torch, gloo):
    """Two run_peers.py torch-ddp runs overlapping on one machine both succeed. With
    `torchrun --standalone` both rendezvous on port 29400: the later launch finds the port
    taken, joins the earlier launch's store as a client, and fails (RendezvousConnectionError)
    once the earlier launch exits while it still runs. So the short run starts first and the
    long one outlasts it by more than torchrun's 5 s monitor interval."""
    flags = {"short": FLAGS + ["--warmup", "0", "--reps", "1"],
             "long": with_value(FLAGS, "--epochs", "600") + ["--warmup", "0", "--reps", "1"]}
    procs = {}
    for name, f in flags.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "t.suite").write_text(f"{name}: {' '.join(f)} --backends cpu-ddp --world-sizes 2 --threads 1\n")
        run([trainbench, "run", "--backend", "reference", *with_value(f, "--epochs", "1"), "--out",
             folder / "results.csv"])
    t0 = time.monotonic()
    for name in flags:
        folder = tmp_path / name
        procs[name] = subprocess.Popen(
            [sys.executable, os.path.join(PEERS, "run_peers.py"), "--suite", folder / "t.suite",
             "--results", folder, "--trainbench", trainbench, "--devices", "ddp"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if name == "short":
            time.sleep(2)  # let the short run's torchrun open its rendezvous store first
    outs = {}
    try:
        for name, p in procs.items():
            outs[name] = p.communicate(timeout=120)[0]
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    print(f"both runs done in {time.monotonic() - t0:.1f} s")
    for name, p in procs.items():
        assert p.returncode == 0, f"{name} run exited {p.returncode}:\n{outs[name][-3000:]}"
        ddp = [r for r in rows(tmp_path / name / "results.csv") if r["backend"] == "torch-ddp"]
        assert [(r["status"], r["world_size"], r["workload"]) for r in ddp] == [("ok", "2", name)], outs[name]


def test_omp_num_threads_is_a_count_for_all():
    # OMP_NUM_THREADS=all made libgomp and torch warn on every torch-ddp rank of the quick suite.
    assert run_peers.omp_threads("all") == str(len(os.sched_getaffinity(0)))
    assert run_peers.omp_threads("3") == "3"
