#!/usr/bin/env python3
"""The machine's sgemm rate at an MLP training step's GEMM shapes, measured with
the system BLAS: numpy.dot on float32 arrays calls cblas_sgemm of the BLAS numpy
is linked against (Debian: libblas.so.3 -> OpenBLAS, the OpenMP build when
libopenblas0-openmp is installed; the library actually loaded is recorded).

For each layer l (in -> out) of the model and batch B, a training step runs
  forward  Z  (B x out) = A (B x in) W^T          2·B·in·out FLOPs
  dW       dW (out x in) = dZ^T (out x B) A         2·B·in·out
  dA       dA (B x in) = dZ (B x out) W            2·B·in·out (not for layer 1)
Each GEMM is timed (median of --reps after one untimed call of every shape; the
repetitions run in rounds over all shapes); the step rate is
the sum of the FLOPs over the sum of the median times: what the BLAS would take
for the step's GEMMs alone. issue #7 holds cpu-omp's large-MLP step to >= 95%
of it (cpu-omp's rate = FLOPs per sample x samples/s, all its non-GEMM work
included).

Usage: sgemm_rate.py [--layers 1024,4096,4096,4096,1000] [--batch 1024]
                     [--threads N|all] [--reps 5] [--out sgemm.json]
"""

import argparse
import ctypes
import os
import sys
import time

from json_out import write_json


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", default="1024,4096,4096,4096,1000")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--threads", default="all", help="BLAS threads (default: every CPU this process may use)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", help="also write the figures as JSON here")
    return ap.parse_args(argv[1:])


def blas_library():
    """(path, OpenBLAS core name or None, OpenBLAS config or None) of the mapped BLAS."""
    path = None
    with open("/proc/self/maps", encoding="utf-8") as f:
        for line in f:
            name = line.split()[-1]
            if "openblas" in os.path.basename(name) or path is None and "libblas" in name:
                path = os.path.realpath(name)
    core = config = None
    if path and "openblas" in path:
        lib = ctypes.CDLL(path)
        for fn in ("openblas_get_corename", "openblas_get_config"):
            getattr(lib, fn).restype = ctypes.c_char_p
        core = lib.openblas_get_corename().decode()
        config = lib.openblas_get_config().decode()
    return path, core, config


def main(argv):
    args = parse_args(argv)
    threads = len(os.sched_getaffinity(0)) if args.threads == "all" else int(args.threads)
    # Before numpy loads the BLAS: the OpenMP build reads OMP_NUM_THREADS, the
    # pthreads build OPENBLAS_NUM_THREADS.
    os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    import numpy as np  # noqa: PLC0415

    layers = [int(v) for v in args.layers.split(",")]
    B = args.batch
    rng = np.random.default_rng(1)
    gemms = []  # (layer, name, call, FLOPs), operands kept alive by the closures
    for l in range(len(layers) - 1):
        fan_in, fan_out = layers[l], layers[l + 1]
        a = rng.standard_normal((B, fan_in), dtype=np.float32)
        w = rng.standard_normal((fan_out, fan_in), dtype=np.float32)
        dz = rng.standard_normal((B, fan_out), dtype=np.float32)
        z, dw, da = (np.empty(s, np.float32) for s in ((B, fan_out), (fan_out, fan_in), (B, fan_in)))
        # Outputs preallocated (as a trainer's are); transposes are views: no copies.
        flops = 2.0 * B * fan_in * fan_out
        gemms.append((l, "forward", lambda a=a, w=w, z=z: np.dot(a, w.T, out=z), flops))
        gemms.append((l, "dW", lambda a=a, dz=dz, dw=dw: np.dot(dz.T, a, out=dw), flops))
        if l > 0:
            gemms.append((l, "dA", lambda w=w, dz=dz, da=da: np.dot(dz, w, out=da), flops))
    # Every shape once untimed, then rounds over all shapes: a slow moment of the machine
    # (one that once timed a whole shape's repetitions at one core's rate) lands in one
    # repetition of several shapes, which the medians drop, not in all of one shape's.
    for _, _, fn, _ in gemms:
        fn()
    times = [[] for _ in gemms]
    for _ in range(args.reps):
        for i, (_, _, fn, _) in enumerate(gemms):
            t0 = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t0)
    rows, total_flops, total_s = [], 0.0, 0.0
    for (l, name, _, flops), t in zip(gemms, times):
        med = sorted(t)[len(t) // 2]
        fan_in, fan_out = layers[l], layers[l + 1]
        rows.append({"layer": l + 1, "gemm": name, "m_n_k": _mnk(name, B, fan_in, fan_out),
                     "gflops": flops / 1e9, "median_s": med, "gflop_per_s": flops / med / 1e9,
                     "min_gflop_per_s": flops / max(t) / 1e9,
                     "max_gflop_per_s": flops / min(t) / 1e9})
        total_flops += flops
        total_s += med
    path, core, config = blas_library()
    result = {
        "layers": layers, "batch": B, "threads": threads, "reps": args.reps,
        "numpy": np.__version__, "blas_library": path, "openblas_core": core, "openblas_config": config,
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", ""),
        "OPENBLAS_L2_SIZE": os.environ.get("OPENBLAS_L2_SIZE", ""),
        "step_gflops_per_sample": total_flops / B / 1e9,
        "step_gemm_s": total_s,
        "step_gflop_per_s": total_flops / total_s / 1e9,
        "gemms": rows,
    }
    print(f"sgemm via numpy {np.__version__} -> {path} (core {core}), {threads} threads, "
          f"B={B}, layers {args.layers}")
    for r in rows:
        print(f"  layer {r['layer']} {r['gemm']:<7} {r['m_n_k']:<16} {r['gflop_per_s']:7.1f} GFLOP/s "
              f"[{r['min_gflop_per_s']:.1f}-{r['max_gflop_per_s']:.1f}]")
    print(f"  step: {total_flops / 1e9:.1f} GFLOP in {total_s * 1e3:.1f} ms = "
          f"{result['step_gflop_per_s']:.1f} GFLOP/s "
          f"(= {B / total_s:.0f} samples/s if the step were its GEMMs alone)")
    if args.out:
        write_json(args.out, result)
    return 0


def _mnk(name, B, fan_in, fan_out):
    m, n, k = {"forward": (B, fan_out, fan_in), "dW": (fan_out, fan_in, B), "dA": (B, fan_in, fan_out)}[name]
    return f"{m}x{n}x{k}"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
