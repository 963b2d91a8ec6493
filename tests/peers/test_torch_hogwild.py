"""torch-hogwild (bench/peers/torch_hogwild.py): PyTorch's Hogwild! — spawned
torch.multiprocessing workers sharing the model (share_memory()), each with its own SGD —
on an exported workload. One worker is torch-cpu: it ends with the reference's parameters
within the oracle test's tolerances. Two and three workers are asynchronous: their final
loss is within the asynchronous bound (5%, README "Hogwild!") of the reference's. Rows
carry the traits reports read (parallelism shm, asynchronous true, scaling_base
torch-cpu) and world_size = workers; run_peers.py plans a torch-hogwild run for every
suite entry that runs cpu-hogwild, and the rows join the suite's report.
"""

import os
import sys

import numpy as np
import pytest

from peer_helpers import PEERS, REPO, peer, rows, run, torch, trainbench  # noqa: F401, F811 (fixtures used by name)
from test_pytorch_oracle import LOSS_RTOL, PARAM_FLOOR, PARAM_RTOL, params

sys.path.insert(0, PEERS)
import run_peers  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "reports"))
from derive import ASYNC_LOSS_RTOL  # noqa: E402
from load import COLUMN, RESULT_COLUMNS  # noqa: E402

REQUIRED = [c for c in RESULT_COLUMNS if not COLUMN[c]["nullable"]]
FLAGS = ("--model mlp --layers 16,32,4 --samples 3000 --batch 50 --epochs 3 --lr 0.1 --shuffle "
         "--seed 3").split()


def hogwild(tmp, results, workers, reps, *extra):
    """torch-hogwild on tmp's export, one thread a worker, one warm-up, rows appended to results."""
    peer(tmp / "export", "--results", results, "--devices", "hogwild", "--workers", workers, "--threads", "1",
         "--warmup", "1", "--reps", reps, *extra)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, trainbench, torch):
    """The reference and torch-hogwild at 1, 2 and 3 workers on one export."""
    tmp = tmp_path_factory.mktemp("hogwild")
    out = tmp / "r.csv"
    run([trainbench, "run", "--backend", "reference", *FLAGS, "--warmup", "0", "--reps", "1",
         "--save-params", tmp / "ref.bin", "--out", out])
    run([trainbench, "export", *FLAGS, "--out", tmp / "export"])
    hogwild(tmp, out, "1", "2", "--save-params", tmp / "one.bin")
    hogwild(tmp, out, "2,3", "3")  # three repetitions: the bound is judged on their median (below)
    return tmp, rows(out)


def test_one_worker_ends_with_the_reference_parameters(trained):
    tmp, all_rows = trained
    ref, one = params(tmp / "ref.bin"), params(tmp / "one.bin")
    rel = np.max(np.abs(one - ref) / (np.abs(ref) + PARAM_FLOOR))
    assert rel < PARAM_RTOL, f"parameters differ: max rel err {rel:.3g}"
    r_ref = [r for r in all_rows if r["backend"] == "reference"][0]
    for r in all_rows:
        if r["backend"] == "torch-hogwild" and r["workers"] == "1":
            assert abs(float(r["final_loss"]) - float(r_ref["final_loss"])) <= LOSS_RTOL * float(r_ref["final_loss"])


def relative_errors(hog, n, lr):
    """|final loss - reference| / reference of the n-worker rows, sorted (printed)."""
    rels = sorted(abs(float(r["final_loss"]) - lr) / lr for r in hog if r["workers"] == n)
    print(f"{n} workers: relative loss errors {', '.join(f'{x:.2e}' for x in rels)} (reference {lr})")
    return rels


def test_several_workers_reach_the_reference_loss_within_the_async_bound(trained):
    tmp, all_rows = trained
    r_ref = [r for r in all_rows if r["backend"] == "reference"][0]
    lr = float(r_ref["final_loss"])
    hog = [r for r in all_rows if r["backend"] == "torch-hogwild"]
    assert [(r["workers"], r["repetition"], r["status"]) for r in hog] == \
        [("1", rep, "ok") for rep in ("0", "1")] + [(n, rep, "ok") for n in ("2", "3") for rep in ("0", "1", "2")]
    # Asynchronous runs differ from run to run: the median repetition of each worker count
    # must be within the bound (as the report's loss check takes the median). Typical here:
    # 1e-3 to 5e-3. Under CI, twice in many runs, one invocation's repetitions at 2 workers
    # ended off: once one of three at 21%; once all three (13%, 15%, 29%) while a re-run of
    # the same test gave 1e-3 (cause not established: a worker that skipped its steps would
    # look so, which the peer now fails (check_shares); PyTorch's unlocked in-place updates
    # are the other suspect). As the repetitions of one invocation share its worker
    # processes, a miss gets one more invocation with fresh workers, judged alone: two in a
    # row fail the test.
    for n in ("2", "3"):
        rels = relative_errors(hog, n, lr)
        if rels[1] > ASYNC_LOSS_RTOL:
            again = tmp / f"again-{n}.csv"
            hogwild(tmp, again, n, "3")
            more = [r for r in rows(again) if r["backend"] == "torch-hogwild"]
            assert [r["status"] for r in more] == ["ok"] * 3, more
            print(f"{n} workers: median {rels[1]:.2e} over the bound, once more with fresh workers:")
            rels = relative_errors(more, n, lr)
        assert rels[1] <= ASYNC_LOSS_RTOL, (n, rels)
    for r in hog:
        assert r["world_size"] == r["workers"] and r["threads"] == "1" and r["devices"] == "cpu"
        assert (r["implementation"], r["device_kind"], r["parallelism"], r["scaling_base"], r["asynchronous"]) == \
            ("pytorch", "cpu", "shm", "torch-cpu", "true")
        for col in REQUIRED:
            assert r[col] != "", f"{col} empty in an ok torch-hogwild row"
        for col in ("workload", "run_id", "model", "layers", "n_samples", "batch_size", "epochs", "lr", "shuffle"):
            assert r[col] == r_ref[col], col
        assert float(r["samples_per_s"]) > 0 and float(r["forward_s"]) > 0


def test_run_peers_plans_torch_hogwild_from_cpu_hogwild_entries():
    class Args:
        python, devices = "/usr/bin/python3", "auto"
    script = os.path.join(PEERS, "pytorch_train.py")
    _, lists = run_peers.split_flags("--backends cpu-hogwild --workers 1,2 --threads 1".split())
    (cmd,) = run_peers.peer_runs(Args, ["cpu-hogwild"], lists, None)
    assert cmd[cmd.index(script) + 1:] == ["--threads", "1", "--devices", "hogwild", "--workers", "1,2"]
    _, lists = run_peers.split_flags("--backends cpu-omp,cpu-hogwild --threads 1,all".split())
    runs = run_peers.peer_runs(Args, ["cpu-omp", "cpu-hogwild"], lists, None)
    assert [c[c.index("--devices") + 1] for c in runs] == ["auto", "hogwild"]
    assert runs[1][runs[1].index("--workers") + 1] == "2" and runs[1][runs[1].index("--threads") + 1] == "all"
    Args.devices = "hogwild"
    assert len(run_peers.peer_runs(Args, ["cpu-omp", "cpu-hogwild"], lists, None)) == 1


def test_torch_hogwild_rows_join_a_suite_and_its_report(tmp_path, trainbench, torch):
    suite = tmp_path / "t.suite"
    suite.write_text("hog: --model mlp --layers 16,24,4 --samples 1000 --batch 50 --lr 0.1 --epochs 2 --warmup 1 "
                     "--reps 2 --threads 1 --backends reference,cpu-omp\n"
                     "hog: --model mlp --layers 16,24,4 --samples 1000 --batch 50 --lr 0.1 --epochs 2 --warmup 1 "
                     "--reps 2 --threads 1 --backends cpu-hogwild --workers 2\n")
    out = tmp_path / "run"
    run([trainbench, "suite", suite, "--out", out])
    run([sys.executable, os.path.join(PEERS, "run_peers.py"), "--suite", suite, "--results", out,
         "--trainbench", trainbench, "--devices", "hogwild"])
    hog = [r for r in rows(out / "results.csv") if r["backend"] == "torch-hogwild"]
    assert [(r["workers"], r["status"]) for r in hog] == [("2", "ok"), ("2", "ok")]
    assert len([c for c in rows(out / "curves.csv") if c["backend"] == "torch-hogwild"]) == 2 * 2
    run([sys.executable, os.path.join(REPO, "reports", "render.py"), out])
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "torch-hogwild" in html and "asynchronous: ✓" in html


def test_a_worker_that_skipped_steps_fails_the_run():
    """check_shares: per epoch each worker ran len(range(rank, nb, n)) steps, else an error
    naming the worker (the run becomes a `failed:` row instead of an ok row on part of the data)."""
    import torch_hogwild  # noqa: PLC0415 (bench/peers on sys.path above)
    nb, n = 7, 3  # ranks 0, 1, 2 own 3, 2, 2 batches
    full = [[0.0, 3, -1, 0, 0, 0, 0], [0.0, 2, -1, 0, 0, 0, 0], [0.0, 2, -1, 0, 0, 0, 0]]
    torch_hogwild.check_shares(full, nb, n, 0)
    short = [list(s) for s in full]
    short[1][1] = 1
    with pytest.raises(RuntimeError, match=r"worker 1 of 3 ran 1 of its 2 steps in epoch 2"):
        torch_hogwild.check_shares(short, nb, n, 1)
