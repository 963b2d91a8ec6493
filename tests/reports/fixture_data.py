"""Builds result folders (results.csv, curves.csv, env.json) that follow the CSV schema 2 contract.

Why code, not checked-in files: the tests need variants (a slowdown injected, a
loss that drifts, a broken header) of the same realistic runs, and the expected
numbers in the tests are derived from the constants here (THROUGHPUT etc.), so a
reader can redo every check by hand.

Weak scaling: add_weak_family() adds workloads <stem>-x1, -x2, ... to a machine
(batch and rows × N, so the per-rank batch stays WEAK_BATCH).

Two machines:
  cpubox  CPU only: reference, cpu-omp (4 and 8 threads), cpu-ddp (1 and 2 ranks);
          every GPU backend skipped; one cpu-ddp row failed in the MLP workload.
  gpubox  4 GPUs: reference, cpu-omp 16 threads, cuda, cuda-dp and cuda-ddp at
          1, 2 and 4 GPUs; cuda-ddp ×4 skipped in the MLP workload.

Every row carries the knob and trait cells the harness would write for its backend
(KNOBS, TRAITS: test data, as `trainbench schema` documents them); `settings`
overrides cells of chosen configurations (two configurations that differ only in
one knob).
"""

import csv
import json
import os

from load import CURVE_COLUMNS, RESULT_COLUMNS

SCHEMA = 2
EPOCHS = 5
JITTER = [0.0, 0.01, -0.01, 0.005, -0.005]   # per repetition: the median is the base value
LINEAR = "linear-64x1-100k"
MLP = "mlp-784x256x10-mnist"
WORKLOADS = {
    LINEAR: dict(model="linear", layers="64,1", dataset="synthetic-regression(seed=1,noise=0.1)",
                 task="regression", n_samples=100000, batch_size=1024, lr=0.05,
                 ref_loss=0.0100431, ref_acc=None),
    MLP: dict(model="mlp", layers="784,256,10", dataset="mnist-idx(train)",
              task="classification", n_samples=60000, batch_size=256, lr=0.1,
              ref_loss=0.281234, ref_acc=0.9213),
}

# (backend, world_size, devices, threads) -> median samples/s, per machine and workload.
THROUGHPUT = {
    "cpubox": {
        LINEAR: {("reference", 1, "cpu", 1): 400_000.0,
                 ("cpu-omp", 1, "cpu", 4): 3_000_000.0,
                 ("cpu-omp", 1, "cpu", 8): 5_000_000.0,
                 ("cpu-ddp", 1, "cpu", 4): 2_900_000.0,
                 ("cpu-ddp", 2, "cpu", 4): 5_220_000.0},
        MLP: {("reference", 1, "cpu", 1): 2_000.0,
              ("cpu-omp", 1, "cpu", 8): 40_000.0},
    },
    "gpubox": {
        LINEAR: {("reference", 1, "cpu", 1): 500_000.0,
                 ("cpu-omp", 1, "cpu", 16): 8_000_000.0,
                 ("cuda", 1, "0", 16): 200_000_000.0,
                 ("cuda-dp", 1, "0", 16): 190_000_000.0,
                 ("cuda-dp", 2, "0,1", 16): 240_000_000.0,
                 ("cuda-dp", 4, "0,1,2,3", 16): 280_000_000.0,
                 ("cuda-ddp", 1, "0", 16): 195_000_000.0,
                 ("cuda-ddp", 2, "0,1", 16): 380_000_000.0,
                 ("cuda-ddp", 4, "0,1,2,3", 16): 720_000_000.0},
        MLP: {("reference", 1, "cpu", 1): 2_500.0,
              ("cpu-omp", 1, "cpu", 16): 90_000.0,
              ("cuda", 1, "0", 16): 4_000_000.0,
              ("cuda-ddp", 2, "0,1", 16): 7_000_000.0},
    },
}
NOT_RUN = {
    "cpubox": [
        (LINEAR, "cuda", 1, "0", 4,
         "skipped: no CUDA device (cudaGetDeviceCount: no CUDA-capable device is detected)"),
        (LINEAR, "cuda-dp", 2, "0,1", 4, "skipped: no CUDA device"),
        (LINEAR, "cuda-ddp", 2, "0,1", 4, "skipped: no CUDA device"),
        (MLP, "cpu-ddp", 2, "cpu", 4, "failed: rank 1 exited with signal 9 (Killed)"),
    ],
    "gpubox": [
        (MLP, "cuda-ddp", 4, "0,1,2,3", 16, "skipped: NCCL not found (set NCCL_ROOT, then rebuild)"),
    ],
}
# The cells the harness writes for each backend: traits (implementation, device_kind,
# parallelism, scaling_base, oracle) and the knobs it honours (the others are empty).
TRAITS = {
    "reference": ("trainbench", "cpu", "none", "", "true"),
    "cpu-omp": ("trainbench", "cpu", "none", "", "false"),
    "cpu-ddp": ("trainbench", "cpu", "ddp", "cpu-omp", "false"),
    "cuda": ("trainbench", "gpu", "none", "", "false"),
    "cuda-dp": ("trainbench", "gpu", "dp", "cuda", "false"),
    "cuda-ddp": ("trainbench", "gpu", "ddp", "cuda", "false"),
    "cpu-hogwild": ("trainbench", "cpu", "shm", "cpu-omp", "false"),
}
ASYNCHRONOUS = {"cpu-hogwild"}  # the asynchronous trait
KNOBS = {
    "cpu-ddp": dict(bucket_mb="25", overlap="true", deterministic="false"),
    "cuda": dict(data_placement="device", cuda_graph="false"),
    "cuda-dp": dict(dp_mode="faithful", dp_devices=""),
    "cuda-ddp": dict(data_placement="device", bucket_mb="25", overlap="true"),
    "cpu-hogwild": dict(workers="1"),
}
GPUS = [{"index": i, "name": "NVIDIA H100 80GB HBM3", "memory_bytes": 85_520_809_984,
         "sm_count": 132, "compute_capability": "9.0"} for i in range(4)]


WEAK_BATCH = 1024
WEAK_ROWS = 32768


def weak_workload(n, batch=WEAK_BATCH, rows=WEAK_ROWS):
    """WORKLOADS entry of <stem>-x<n>: global batch and rows grow with n."""
    return dict(model="mlp", layers="1024,4096,4096,1000",
                dataset="synthetic-classification(seed=1)", task="classification",
                n_samples=rows * n, batch_size=batch * n, lr=0.01, ref_loss=6.5, ref_acc=0.01)


def add_weak_family(monkeypatch, machine, stem, members, batch=WEAK_BATCH):
    """members: {n: {(backend, world_size, devices, threads): samples/s}}; each becomes
    workload <stem>-x<n> of `machine` (undone by monkeypatch after the test)."""
    for n, table in members.items():
        name = f"{stem}-x{n}"
        monkeypatch.setitem(WORKLOADS, name, weak_workload(n, batch))
        monkeypatch.setitem(THROUGHPUT[machine], name, dict(table))
    return [f"{stem}-x{n}" for n in members]


def run_id(machine):
    return f"20261122-013000-{machine}"


def result_row(machine, workload, key, rep, sps, loss, status="ok", settings=None):
    w = WORKLOADS[workload]
    backend, ws, devices, threads = key
    impl, device_kind, parallelism, scaling_base, oracle = TRAITS[backend]
    row = dict(schema_version=SCHEMA, run_id=run_id(machine), timestamp="2026-11-22T01:30:00Z",
               host=machine, workload=workload, backend=backend, model=w["model"],
               layers=w["layers"], dataset=w["dataset"], task=w["task"],
               n_samples=w["n_samples"], batch_size=w["batch_size"], epochs=EPOCHS, warmup=1,
               lr=w["lr"], momentum=0, weight_decay=0, seed=1, shuffle="false", drop_last="false",
               precision="fp64" if backend == "reference" else "fp32",
               world_size=ws, devices=devices, threads=threads, **KNOBS.get(backend, {}),
               implementation=impl, device_kind=device_kind, parallelism=parallelism,
               scaling_base=scaling_base, oracle=oracle,
               asynchronous="true" if backend in ASYNCHRONOUS else "false", repetition=rep, status=status)
    row.update(settings or {})
    metrics = ["train_time_s", "samples_per_s", "forward_s", "backward_s", "optimizer_s",
               "transfer_s", "comm_s", "allreduce_bytes_per_step", "comm_busbw_gbps", "final_loss",
               "final_accuracy", "param_checksum", "peak_host_mem_bytes", "peak_device_mem_bytes"]
    if status != "ok":
        row.update({m: "" for m in metrics})
        return row
    t = EPOCHS * w["n_samples"] / sps
    gpu = devices != "cpu"
    row.update(train_time_s=repr(t), samples_per_s=repr(sps),
               forward_s=repr(0.40 * t), backward_s=repr(0.35 * t), optimizer_s=repr(0.10 * t),
               transfer_s=repr(0.05 * t if gpu else 0.0),
               comm_s=repr(0.05 * t if ws > 1 else 0.0),
               allreduce_bytes_per_step=1_048_576 if ws > 1 else 0, comm_busbw_gbps="",
               final_loss=repr(loss),
               final_accuracy="" if w["ref_acc"] is None else repr(w["ref_acc"]),
               param_checksum="12.3456", peak_host_mem_bytes=123_456_789,
               peak_device_mem_bytes=987_654_321 if gpu else 0)
    return row


def build_rows(machine, speed=None, loss_factor=None, jitter=None, reps=len(JITTER),
               drop=(), settings=None, status=None, not_run=True, failed_reps=None):
    """speed/loss_factor: {(workload, key): factor} applied to samples/s or final loss;
    jitter: {(workload, key): [per-repetition factors]} replacing JITTER for that row;
    drop: backends left out of the run entirely; settings: {(workload, key): {column:
    cell}} overriding cells (a knob) of that configuration's rows; status: {(workload,
    key): "failed: <why>" or "skipped: <why>"} one such row instead of that
    configuration's repetitions; failed_reps: {(workload, key): {repetition: "failed:
    <why>"}} those repetitions failed, the others ran (all of them: a configuration that
    failed in every repetition); not_run=False leaves out NOT_RUN's rows."""
    speed, loss_factor, jitter = speed or {}, loss_factor or {}, jitter or {}
    settings, status, failed_reps = settings or {}, status or {}, failed_reps or {}
    rows, curves = [], []
    for workload, table in THROUGHPUT[machine].items():
        ref_loss = WORKLOADS[workload]["ref_loss"]
        for key, base in table.items():
            if key[0] in drop:
                continue
            if (workload, key) in status:
                rows.append(result_row(machine, workload, key, 0, 0, 0, status[(workload, key)],
                                       settings=settings.get((workload, key))))
                continue
            jit = jitter.get((workload, key), JITTER)
            loss = ref_loss * (1 + (0 if key[0] == "reference" else 2e-6))
            loss *= loss_factor.get((workload, key), 1.0)
            for rep in range(reps):
                why = failed_reps.get((workload, key), {}).get(rep)
                if why:
                    rows.append(result_row(machine, workload, key, rep, 0, 0, why,
                                           settings=settings.get((workload, key))))
                    continue
                j = jit[rep % len(jit)]
                sps = base * speed.get((workload, key), 1.0) * (1 + j)
                row = result_row(machine, workload, key, rep, sps, loss,
                                 settings=settings.get((workload, key)))
                rows.append(row)
                for epoch in range(1, EPOCHS + 1):
                    curve = {c: row[c] for c in CURVE_COLUMNS if c in row}
                    curve.update(epoch=epoch, train_loss=repr(loss * (1 + 4.0 / epoch ** 2)))
                    curves.append(curve)
    for workload, backend, ws, devices, threads, why in NOT_RUN[machine] if not_run else ():
        rows.append(result_row(machine, workload, (backend, ws, devices, threads), 0, 0, 0, why))
    return rows, curves


def env_for(machine):
    gpu = machine == "gpubox"
    env = {"schema_version": SCHEMA, "run_id": run_id(machine),
           "timestamp": "2026-11-22T01:30:00Z",
           "command_line": "build/trainbench --suite default --reps 5",
           "trainbench_version": "0.1.0", "git": {"commit": "0123456789abcdef0123", "dirty": False},
           "build": {"type": "Release", "compiler": "GNU 12.2.0", "flags": "-O3 -march=native",
                     "cuda_toolkit": "13.0.88" if gpu else None, "cuda_runtime": "13.0" if gpu else None,
                     "mpi": "3.1", "nccl": "2.28.3" if gpu else None},
           "host": {"hostname": machine, "os": "Debian GNU/Linux 12 (bookworm)",
                    "kernel": "6.1.0-27-amd64",
                    "cpu_model": "Intel(R) Xeon(R) Platinum 8480+" if gpu else "AMD EPYC 7B13",
                    "logical_cores": 32 if gpu else 8, "memory_bytes": 270_000_000_000},
           "openmp": {"max_threads": 16 if gpu else 8, "proc_bind": "close", "places": "cores"},
           "seed": 1}
    if gpu:
        env["gpus"] = GPUS
        env["driver"] = "580.65.06"
    else:
        env["gpus"] = []
        env["gpu_unavailable_reason"] = "cudaGetDeviceCount: no CUDA-capable device is detected"
    return env


def write_csv(path, columns, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def write_run(folder, machine, env_update=None, run=None, **kw):
    """Write one result folder for `machine`; kw goes to build_rows; `run` replaces the
    run id (run_id(machine)) on every row, curve and in env.json: a second run of the
    same machine for compare. Returns the folder."""
    os.makedirs(folder, exist_ok=True)
    rows, curves = build_rows(machine, **kw)
    if run is not None:
        for r in rows + curves:
            r["run_id"] = run
        env_update = dict({"run_id": run}, **(env_update or {}))
    write_csv(os.path.join(folder, "results.csv"), RESULT_COLUMNS, rows)
    write_csv(os.path.join(folder, "curves.csv"), CURVE_COLUMNS, curves)
    env = env_for(machine)
    for k, v in (env_update or {}).items():
        env[k] = v
    with open(os.path.join(folder, "env.json"), "w", encoding="utf-8") as f:
        json.dump(env, f, indent=2)
    with open(os.path.join(folder, "log.txt"), "w", encoding="utf-8") as f:
        f.write("fixture run\n")
    return str(folder)


# Measured ceilings (env.json `ceilings`, harness/ceilings.h) for each machine, as the
# efficiency section and its roofline read them.
CPU_CEILINGS = {"host": "cpubox", "units": {}, "gpus": [], "gpu_reason": "no CUDA device",
                "cpu": {"fma_gflops_1core": 100.0, "fma_gflops_all": 700.0, "triad_gbs_1core": 10.0,
                        "triad_gbs": 40.0, "threads": 8, "isa": "avx512f", "duration_s": 0.8}}
GPU_CEILINGS = {"host": "gpubox", "units": {},
                "cpu": {"fma_gflops_1core": 100.0, "fma_gflops_all": 1600.0, "triad_gbs_1core": 12.0,
                        "triad_gbs": 200.0, "threads": 32, "isa": "avx512f", "duration_s": 0.9},
                "gpus": [{"index": i, "name": "NVIDIA H100 80GB HBM3", "sgemm_gflops": 50_000.0,
                          "tf32_gflops": 400_000.0, "d2d_gbs": 3000.0, "gemm_n": 8192,
                          "copy_bytes": 1 << 30, "duration_s": 0.3} for i in range(4)],
                "gpu_reason": None}


def summarize(folder):
    """The report's derived summary of one result folder (reports/derive.py)."""
    import derive  # noqa: PLC0415 (reports/ modules import load, which this module uses)
    from load import load_runs  # noqa: PLC0415
    return derive.summarize(load_runs([str(folder)]))


def render_html(folder):
    """Renders folder/report.html with reports/render.py and returns its text."""
    import render  # noqa: PLC0415
    assert render.main([str(folder)]) == 0
    with open(os.path.join(folder, "report.html"), encoding="utf-8") as f:
        return f.read()
