#!/usr/bin/env python3
"""The GPU targets of issues #3 and #4 from one GPU `make bench` folder (gpu.suite)
and the CUDA micro-benchmarks' JSON written beside it (microbench_cuda.json).

  large MLP step   (mlp-1024x4096x4096x4096x1000-64k, cuda, fp32)
                   step time <= 1.25 x the sum of the step's cuBLAS GEMM times
  linear + graph   (linear-64x1-16M-b1M-graph, cuda, data resident, --cuda-graph, 1M-row batches)
                   data bandwidth >= 60% of the device's measured copy bandwidth
  weak scaling     (weak-mlp-1024x4096x4096x4096x1000-x8, cuda-ddp, 8 GPUs)
                   samples/s(8) / (8 x samples/s(x1)) >= 90%
  all-reduce busbw (cuda-ddp of dpddp-mlp-784x2048x2048x10, and of the weak-*-xN family,
                   each at its largest world size with ok rows)
                   in-training busbw >= 80% of the NCCL sweep's busbw for the same payload

Formulas:
  step time        = median over repetitions of train_time_s / (epochs x ceil(n_samples / batch_size))
  GEMM sum         = sum over the step's GEMMs (per layer: forward B x out x in, dW out x in x B,
                     and dA B x in x out except for the first layer) of the fp32 micro-benchmark
                     time of that shape (BM_gemm_cuda/<workload>/fp32/<role>/...)
  data bandwidth   = median samples/s x (D + O) x 4 bytes: what the fused linear step
                     (kernels/cuda/linear_step.h, which a linear regression model with
                     O <= 16, D <= 2048 and O x D <= 8192 takes) reads from device memory
                     per sample: the sample's row of X and of y, once (forward, loss and
                     gradients in one pass; its per-block partials add 8 (O D + O + 1)
                     bytes per 16 max(O, 4) rows or more, under 0.1% for 64 -> 1, not
                     counted). Device-memory bytes moved, as the copy bandwidth counts them.
                     For a shape the fused step does not take the target is not evaluated:
                     the two-GEMM path reads X twice, so (D + O) x 4 would not be what moves.
  copy bandwidth   = the fastest device-to-device cudaMemcpy in the micro-benchmarks
                     (BM_memcpy_cuda/d2d/*, counter B/s = 2 x size / time: every byte is
                     read once and written once)
  weak efficiency  = median samples/s of cuda-ddp x8 / (8 x median samples/s of cuda-ddp x1)
  busbw share      = median comm_busbw_gbps of the rows / busbw of the NCCL sweep
                     (tb_bench_allreduce_nccl --csv, allreduce_nccl.csv, rows whose check
                     found 0 wrong) at the size nearest (in ratio) to the rows'
                     allreduce_bytes_per_step; '–' when no swept size is within 2x of it.
                     comm_busbw_gbps = 2(n-1)/n x allreduce_bytes_per_step x steps / the
                     sum of each bucket's ncclAllReduce time (events right before and after
                     it on the NCCL stream), so the payload compared is the step's whole
                     gradient (in several buckets when it exceeds --bucket-mb), timed
                     without the backward compute between buckets.

Usage: gpu_targets.py RESULTS_DIR   (reads results.csv, microbench_cuda.json and
allreduce_nccl.csv; prints a Markdown table and writes RESULTS_DIR/gpu_targets.md).
Exit 0 when it could evaluate (met or not: a target missed is a finding, not a crash);
2 bad input.
"""

import csv
import json
import math
import os
import statistics
import sys

LARGE_MLP = "mlp-1024x4096x4096x4096x1000-64k"
GEMM_WORKLOAD = "mlp-1024x4096x4096x4096x1000"  # the micro-benchmarks' name for its shapes
LINEAR_GRAPH = "linear-64x1-16M-b1M-graph"
WEAK_STEM = "weak-mlp-1024x4096x4096x4096x1000"
STEP_OVER_GEMM_MAX = 1.25
BANDWIDTH_SHARE_MIN = 0.60
WEAK_EFFICIENCY_MIN = 0.90
DPDDP = "dpddp-mlp-784x2048x2048x10"
SWEEP_CSV = "allreduce_nccl.csv"
BUSBW_SHARE_MIN = 0.80
SWEEP_SIZE_RATIO_MAX = 2.0  # the nearest swept size must be within this factor of the payload


def ok_rows(rows, workload, backend):
    return [r for r in rows if r["workload"] == workload and r["backend"] == backend and r["status"] == "ok"]


def step_gemms(layers, batch):
    """(role, transA, transB, m, n, k) of every GEMM one training step makes, with repeats."""
    out = []
    for i in range(len(layers) - 1):
        n_in, n_out = layers[i], layers[i + 1]
        out.append(("fwd", "NT", batch, n_out, n_in))
        out.append(("dW", "TN", n_out, n_in, batch))
        if i > 0:
            out.append(("dA", "NN", batch, n_in, n_out))
    return out


def fused_linear_step_applies(d, o):
    """kernels/cuda/linear_step_kernels.cuh's linear_step_fits: the cuda backend takes its
    one-pass step for a linear regression model of this D -> O."""
    return 1 <= o <= 16 and 1 <= d <= 2048 and o * d <= 8192


def bench_times(bench):
    """{benchmark name without '/manual_time': (real_time in s, bytes per second)}: the
    counter B/s (bench/micro/bench_rates.h), or bytes_per_second of older JSON."""
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    out = {}
    for b in bench.get("benchmarks", []):
        if b.get("error_occurred") or b.get("run_type", "iteration") != "iteration":
            continue
        name = b["name"].removesuffix("/manual_time")
        out[name] = (b["real_time"] * scale[b.get("time_unit", "ns")], b.get("B/s", b.get("bytes_per_second")))
    return out


def large_mlp(rows, times):
    rs = ok_rows(rows, LARGE_MLP, "cuda")
    rs = [r for r in rs if r["precision"] == "fp32"]
    if not rs:
        return None, f"no ok fp32 cuda row of {LARGE_MLP}"
    r0 = rs[0]
    layers = [int(v) for v in r0["layers"].split(",")]
    batch, n, epochs = int(r0["batch_size"]), int(r0["n_samples"]), int(r0["epochs"])
    steps = epochs * math.ceil(n / batch)
    step = statistics.median(float(r["train_time_s"]) / steps for r in rs)
    total = 0.0
    for role, ops, m, nn, k in step_gemms(layers, batch):
        name = f"BM_gemm_cuda/{GEMM_WORKLOAD}/fp32/{role}/{ops}/{m}x{nn}x{k}"
        if name not in times:
            return None, f"no micro-benchmark {name}"
        total += times[name][0]
    ratio = step / total
    return (ratio <= STEP_OVER_GEMM_MAX,
            f"step {step * 1e3:.3f} ms / GEMM sum {total * 1e3:.3f} ms = {ratio:.3f} (target <= {STEP_OVER_GEMM_MAX})")


def linear_graph(rows, times):
    rs = ok_rows(rows, LINEAR_GRAPH, "cuda")
    if not rs:
        return None, f"no ok cuda row of {LINEAR_GRAPH}"
    layers = [int(v) for v in rs[0]["layers"].split(",")]
    d, o = layers[0], layers[-1]
    if len(layers) != 2 or not fused_linear_step_applies(d, o):
        return None, (f"{'x'.join(map(str, layers))} does not take the fused linear step: "
                      "(D + O) x 4 bytes per sample is not what it moves")
    data_bw = statistics.median(float(r["samples_per_s"]) for r in rs) * (d + o) * 4
    copies = [bw for name, (_, bw) in times.items() if name.startswith("BM_memcpy_cuda/d2d/") and bw]
    if not copies:
        return None, "no BM_memcpy_cuda/d2d micro-benchmark"
    copy_bw = max(copies)
    share = data_bw / copy_bw
    return (share >= BANDWIDTH_SHARE_MIN,
            f"data {data_bw / 1e9:.1f} GB/s / copy {copy_bw / 1e9:.1f} GB/s = {share:.0%} "
            f"(target >= {BANDWIDTH_SHARE_MIN:.0%})")


def weak_scaling(rows):
    one = ok_rows(rows, WEAK_STEM + "-x1", "cuda-ddp")
    eight = [r for r in ok_rows(rows, WEAK_STEM + "-x8", "cuda-ddp") if r["world_size"] == "8"]
    if not one or not eight:
        return None, "needs ok cuda-ddp rows of -x1 and -x8 (8 GPUs)"
    s1 = statistics.median(float(r["samples_per_s"]) for r in one)
    s8 = statistics.median(float(r["samples_per_s"]) for r in eight)
    eff = s8 / (8 * s1)
    return (eff >= WEAK_EFFICIENCY_MIN,
            f"{s8:,.0f} / (8 x {s1:,.0f}) samples/s = {eff:.1%} (target >= {WEAK_EFFICIENCY_MIN:.0%})")


def read_sweep(path):
    """[(bytes, busbw GB/s, world size)] of the NCCL sweep's rows whose check found no
    wrong element. Raises ValueError on a malformed file."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        try:
            if r["wrong"] != "0":
                continue  # unchecked (--no-check) or wrong: not a measurement to compare with
            size, bus, world = int(r["bytes"]), float(r["busbw_gbps"]), int(r["world_size"])
        except (KeyError, TypeError) as e:
            raise ValueError(f"missing column {e}") from None
        if size <= 0:
            raise ValueError(f"bytes must be > 0, got {size}")
        if bus > 0:
            out.append((size, bus, world))
    return out


def size_text(b):
    """Bytes in the largest binary unit it reaches: 32 MiB, 22.2 MiB, 25.0 KiB, 4 B."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if b >= 1 << shift:
            return f"{b >> shift} {unit}" if b % (1 << shift) == 0 else f"{b / (1 << shift):.1f} {unit}"
    return f"{b} B"


def busbw_vs_sweep(rows, sweep, in_family):
    rs = [r for r in rows if r["backend"] == "cuda-ddp" and r["status"] == "ok" and in_family(r["workload"])
          and r.get("comm_busbw_gbps")]
    if not rs:
        return None, "no ok cuda-ddp row with comm_busbw_gbps (needs 2 GPUs)"
    world = max(int(r["world_size"]) for r in rs)
    rs = [r for r in rs if int(r["world_size"]) == world]
    train = statistics.median(float(r["comm_busbw_gbps"]) for r in rs)
    payload = int(rs[0]["allreduce_bytes_per_step"])
    if sweep is None:
        return None, f"no NCCL all-reduce sweep ({SWEEP_CSV})"
    # The sweep at the rows' world size, else at its largest (the text then names both).
    sweep_world = world if any(s[2] == world for s in sweep) else max((s[2] for s in sweep), default=0)
    candidates = [s for s in sweep if s[2] == sweep_world]
    if not candidates or payload <= 0:
        return None, f"no checked size in {SWEEP_CSV}"
    # Nearest in ratio (the sweep is geometric); a tie goes to the smaller size.
    size, bus, _ = min(candidates, key=lambda s: (abs(math.log(s[0] / payload)), s[0]))
    if max(size / payload, payload / size) > SWEEP_SIZE_RATIO_MAX:
        return None, (f"no swept size within {SWEEP_SIZE_RATIO_MAX:g}x of {size_text(payload)} "
                      f"(nearest {size_text(size)})")
    share = train / bus
    note = "" if sweep_world == world else f" (sweep at n={sweep_world}, training at n={world})"
    return (share >= BUSBW_SHARE_MIN,
            f"n={world}, {size_text(payload)}/step: {train:.4g} GB/s / sweep {bus:.4g} GB/s at {size_text(size)} "
            f"= {share:.0%} (target >= {BUSBW_SHARE_MIN:.0%}){note}")


def main(argv):
    if len(argv) != 2:
        print("usage: gpu_targets.py RESULTS_DIR", file=sys.stderr)
        return 2
    folder = argv[1]
    try:
        with open(os.path.join(folder, "results.csv"), encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"gpu_targets.py: {folder}/results.csv: {e.strerror}", file=sys.stderr)
        return 2
    times = {}
    bench_path = os.path.join(folder, "microbench_cuda.json")
    if os.path.isfile(bench_path):
        try:
            with open(bench_path, encoding="utf-8") as f:
                times = bench_times(json.load(f))
        except (OSError, ValueError, KeyError) as e:
            print(f"gpu_targets.py: {bench_path}: unreadable: {e}", file=sys.stderr)
            return 2
    sweep = None
    sweep_path = os.path.join(folder, SWEEP_CSV)
    if os.path.isfile(sweep_path):
        try:
            sweep = read_sweep(sweep_path)
        except (OSError, ValueError) as e:
            print(f"gpu_targets.py: {sweep_path}: unreadable: {e}", file=sys.stderr)
            return 2
    lines = ["| target | measured | met |", "|---|---|---|"]
    for label, (met, text) in [("large MLP step vs its GEMMs (#3)", large_mlp(rows, times)),
                               ("linear, resident data, CUDA graph (#3)", linear_graph(rows, times)),
                               ("cuda-ddp weak scaling at 8 GPUs (#4)", weak_scaling(rows)),
                               (f"cuda-ddp in-training busbw vs NCCL sweep, {DPDDP} (#4)",
                                busbw_vs_sweep(rows, sweep, lambda w: w == DPDDP)),
                               ("cuda-ddp in-training busbw vs NCCL sweep, weak-*-xN (#4)",
                                busbw_vs_sweep(rows, sweep, lambda w: w.startswith(WEAK_STEM + "-x")))]:
        lines.append(f"| {label} | {text} | {'–' if met is None else ('yes' if met else 'NO')} |")
    table = "\n".join(lines) + "\n"
    print(table, end="")
    with open(os.path.join(folder, "gpu_targets.md"), "w", encoding="utf-8") as f:
        f.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
