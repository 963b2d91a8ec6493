"""Hardware efficiency per configuration: how close each row came to this machine.

Why here: the CSV holds what was trained (model, layers, task, batch) and how fast
(samples/s); env.json holds the machine's ceilings, measured by the harness at the
start of the run (harness/ceilings.h). Everything else is derived, once, here:

  FLOPs per sample   the model's matrix products, forward and backward: for layer
                     widths d0..dL and P = sum of d_i * d_{i+1} (the weights),
                     forward 2·P, weight gradients 2·P, input gradients of layers
                     2..L 2·(P − d0·d1) (none for layer 1: the input needs none).
                     Bias, activation, loss and SGD are not counted (O(widths) per
                     sample against O(widths²) for the products).
  bytes per sample   a lower bound on memory traffic: the sample's input row (4·d0)
                     and target (4·dL for regression, a 4-byte label for
                     classification) read once, plus the SGD update's 12·N bytes per
                     step (parameters and gradients read, parameters written; N
                     parameters with biases; + 8·N for the momentum buffer) spread
                     over the step's rows. Activations and the GEMMs' re-reads of the
                     weights are left out (they stay in cache for small models), so
                     the arithmetic intensity is an upper bound.
  ceilings           CPU rows: FMA rate and triad bandwidth at the row's threads
                     (threads × world_size; 1 = the one-core figures, ≥ the threads
                     measured = the all-thread figures, linear in between). GPU rows:
                     the sum over the distinct GPUs in `devices` of cuBLAS SGEMM
                     (TF32 rows: the TF32 rate) and device-to-device copy bandwidth.
                     fp64 rows (reference) have none: the loops are fp32.
  roofline           attainable = min(compute ceiling, intensity × memory ceiling);
                     % of roofline = achieved GFLOP/s / attainable. Never shown above
                     100%: a row faster than its ceiling says "ceiling under-measured".

figures(summary) returns these per configuration as plain data (for summary.json).
Spec-sheet peaks (SPEC_SHEET) are shown beside the measured ceilings, never used.
"""

import math
from dataclasses import dataclass

import env_schema

FORMULAS = [
    ("model FLOPs per sample", "widths d0..dL, P = Σ d_i·d_{i+1}: forward 2·P + weight gradients 2·P + "
                               "input gradients of layers 2..L 2·(P − d0·d1); bias, activation, loss and "
                               "SGD not counted"),
    ("bytes per sample", "4·d0 (input row) + 4·dL (regression target) or 4 (class label) + "
                         "(12·N, + 8·N with momentum) / rows per step, N = parameters with biases: "
                         "each row read once, SGD reads parameters and gradients and writes "
                         "parameters once per step; a lower bound (activations and weight re-reads "
                         "not counted)"),
    ("arithmetic intensity (FLOP/B)", "FLOPs per sample / bytes per sample"),
    ("achieved GFLOP/s, GB/s", "FLOPs (bytes) per sample × median samples/s / 1e9"),
    ("compute and memory ceilings", "env.json ceilings measured at the start of the run: CPU rows at "
                                    "T = threads × world_size: T = 1 the one-core FMA and triad figures, "
                                    "T ≥ the threads measured the all-thread ones, linear in between; "
                                    "GPU rows: sum over the distinct GPUs of the row of cuBLAS SGEMM "
                                    "(TF32 rows: TF32) GFLOP/s and device-to-device copy GB/s; none for "
                                    "fp64 rows"),
    ("% of roofline", "achieved GFLOP/s / min(compute ceiling, intensity × memory ceiling); bound: "
                      "whichever of the two is smaller; above 100% is not shown: the row says "
                      "\"ceiling under-measured\""),
]

# NVIDIA datasheet peaks (dense, no sparsity): FP32 and TF32 TFLOP/s, memory TB/s. Shown
# beside the measured ceilings for context only. Matched on the CUDA device name, most
# specific first; anything else is "unknown".
SPEC_SHEET = [
    # (substrings that must all occur, label, fp32 TFLOP/s, tf32 TFLOP/s, memory TB/s);
    # a label of None: a variant whose figures differ and are not tabled here (unknown).
    (("NVL",), None, None, None, None),
    (("H200",), "H200 SXM", 67.0, 494.7, 4.8),
    (("H100", "PCIe"), "H100 PCIe", 51.2, 378.0, 2.0),
    (("H100", "HBM3"), "H100 SXM", 67.0, 494.7, 3.35),
    (("A100", "PCIE", "40GB"), "A100 PCIe 40GB", 19.5, 156.0, 1.555),
    (("A100", "PCIe"), "A100 PCIe 80GB", 19.5, 156.0, 1.935),
    (("A100", "SXM4", "40GB"), "A100 SXM4 40GB", 19.5, 156.0, 1.555),
    (("A100", "SXM4", "80GB"), "A100 SXM4 80GB", 19.5, 156.0, 2.039),
    (("Tesla T4",), "T4", 8.1, None, 0.32),
    (("NVIDIA T4",), "T4", 8.1, None, 0.32),
]


def spec_sheet(name):
    """(label, fp32 GFLOP/s, tf32 GFLOP/s or None, memory GB/s) for a GPU name, or None."""
    for needles, label, fp32, tf32, mem in SPEC_SHEET:
        if all(n in (name or "") for n in needles):
            if label is None:
                return None
            return label, fp32 * 1e3, None if tf32 is None else tf32 * 1e3, mem * 1e3
    return None


def widths(layers):
    """'784,256,10' -> [784, 256, 10]; None when the cell is not a list of positive ints."""
    try:
        ws = [int(x) for x in str(layers).split(",")]
    except ValueError:
        return None
    return ws if len(ws) >= 2 and all(w > 0 for w in ws) else None


def flops_breakdown(ws):
    """{'forward', 'weight_grad', 'input_grad', 'total'} FLOPs per sample for widths ws."""
    pairs = [a * b for a, b in zip(ws, ws[1:])]
    out = {"forward": 2 * sum(pairs), "weight_grad": 2 * sum(pairs), "input_grad": 2 * sum(pairs[1:])}
    out["total"] = out["forward"] + out["weight_grad"] + out["input_grad"]
    return out


def flops_per_sample(ws):
    return flops_breakdown(ws)["total"]


def param_count(ws):
    """Weights and biases: Σ (d_i + 1) · d_{i+1}."""
    return sum((a + 1) * b for a, b in zip(ws, ws[1:]))


def rows_per_step(n_samples, batch, drop_last):
    """Mean rows per SGD step over an epoch (the last partial batch kept unless dropped)."""
    if drop_last:
        return float(batch) if n_samples >= batch else None
    steps = math.ceil(n_samples / batch)
    return n_samples / steps


def bytes_per_sample(ws, task, n_samples, batch, drop_last=False, momentum=0.0):
    """The lower-bound traffic model of the module docstring, in bytes per sample."""
    per_step = rows_per_step(n_samples, batch, drop_last)
    if per_step is None:
        return None
    target = 4 * ws[-1] if task == "regression" else 4
    n = param_count(ws)
    step_bytes = 12 * n + (8 * n if momentum else 0)
    return 4 * ws[0] + target + step_bytes / per_step


@dataclass
class Efficiency:
    """One configuration's figures; None where not computable, with `note` saying why."""
    flops: float = None            # per sample
    bytes: float = None            # per sample
    intensity: float = None        # FLOP/B
    gflops: float = None           # achieved
    gbs: float = None              # achieved
    peak_gflops: float = None      # compute ceiling for this row
    peak_gbs: float = None         # memory ceiling for this row
    roof_gflops: float = None      # min(peak, intensity × bandwidth)
    bound: str = None              # "compute" or "memory"
    fraction: float = None         # of the roofline, in [0, 1]; None when over or unknown
    over: bool = False             # achieved above the roofline: ceiling under-measured
    device: str = None             # roofline panel: "CPU <model> (<host>)" or "GPU <name> (<host>)"
    note: str = ""


def ceilings_of(env):
    """(ceilings dict, None) when env.json has measured ceilings, else (None, why)."""
    c = env.get("ceilings") if isinstance(env, dict) else None
    if c is None:
        return None, "no ceilings in env.json (measured by trainbench since issue #17)"
    problem = env_schema.ceilings_problem(env)
    if problem:
        return None, f"ceilings in env.json ignored: {problem}"
    if c.get("omitted"):
        return None, f"ceilings not measured: {c['omitted']}"
    return c, None


def _positive(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def _interpolate(one, all_, measured_threads, t):
    if t <= 1 or measured_threads <= 1:
        return one if t <= 1 else all_
    if t >= measured_threads:
        return all_
    return one + (all_ - one) * (t - 1) / (measured_threads - 1)


def cpu_ceiling(cpu, threads):
    """(GFLOP/s, GB/s) at `threads` threads from env.json's ceilings.cpu, or None."""
    keys = ("fma_gflops_1core", "fma_gflops_all", "triad_gbs_1core", "triad_gbs")
    if not isinstance(cpu, dict) or not all(_positive(cpu.get(k)) for k in keys):
        return None
    n = cpu.get("threads") if isinstance(cpu.get("threads"), int) and cpu["threads"] > 0 else 1
    return (_interpolate(cpu["fma_gflops_1core"], cpu["fma_gflops_all"], n, threads),
            _interpolate(cpu["triad_gbs_1core"], cpu["triad_gbs"], n, threads))


def gpu_ids(devices):
    """'0,1,1' -> [0, 1] (distinct, in order); None for multi-node 'NODE:GPU' cells."""
    out = []
    for d in str(devices or "").split(","):
        if not d.strip().isdigit():
            return None
        if int(d) not in out:
            out.append(int(d))
    return out or None


def gpu_ceiling(gpus, ids, precision):
    """(GFLOP/s, GB/s, names) summed over GPUs `ids`, or (None, why)."""
    by_index = {g.get("index"): g for g in gpus or [] if isinstance(g, dict)}
    flops = bw = 0.0
    names = []
    key = "tf32_gflops" if precision == "tf32" else "sgemm_gflops"
    for i in ids:
        g = by_index.get(i)
        if g is None:
            return None, f"no ceiling measured for GPU {i}"
        if g.get("unavailable"):
            return None, f"GPU {i} not measured: {g['unavailable']}"
        if not (_positive(g.get(key)) and _positive(g.get("d2d_gbs"))):
            return None, f"GPU {i}: no {key} / d2d_gbs in env.json"
        flops += g[key]
        bw += g["d2d_gbs"]
        if g.get("name") not in names:
            names.append(g.get("name"))
    return (flops, bw, names), None


def roofline(gflops, intensity, peak_gflops, peak_gbs):
    """(attainable GFLOP/s, bound, fraction in [0, 1] or None, over) for a row."""
    mem_roof = intensity * peak_gbs
    roof = min(peak_gflops, mem_roof)
    bound = "compute" if peak_gflops <= mem_roof else "memory"
    frac = gflops / roof
    if not math.isfinite(frac) or frac < 0:
        return roof, bound, None, False
    if frac > 1.0:
        return roof, bound, None, True
    return roof, bound, frac, False


def of_group(g, env):
    """Efficiency of one configuration (a derive.Group) against its run's env.json."""
    e = Efficiency()
    r = g.rows[0]
    ws = widths(r["layers"])
    if ws is None:
        e.note = f"layers '{r['layers']}' not understood"
        return e
    e.flops = float(flops_per_sample(ws))
    e.bytes = bytes_per_sample(ws, r["task"], r["n_samples"], r["batch_size"], bool(r["drop_last"]),
                               r["momentum"] or 0.0)
    e.gflops = e.flops * g.med_sps / 1e9
    if e.bytes:
        e.intensity = e.flops / e.bytes
        e.gbs = e.bytes * g.med_sps / 1e9
    if not all(math.isfinite(v) for v in (e.gflops, e.gbs or 0.0)):
        # A hand-edited samples/s (1e308) times the FLOPs per sample overflows: no rate.
        e.gflops = e.gbs = None
        e.note = f"achieved rate not finite: samples/s {g.med_sps:.4g} × FLOPs per sample overflows"
        return e
    ceil, why = ceilings_of(env)
    if ceil is None:
        e.note = why
        return e
    if ceil.get("host") and ceil["host"] != g.host:
        e.note = f"ceilings measured on {ceil['host']}, not on {g.host}"
        return e
    kind = g.traits.get("device_kind")
    if g.precision == "fp64" or (r["precision"] or "") == "fp64":
        e.note = "fp64: no fp64 ceiling measured"
        return e
    host = g.host
    if kind == "cpu":
        t = max(1, (g.threads or 1) * (g.world_size or 1))
        c = cpu_ceiling(ceil.get("cpu"), t)
        if c is None:
            e.note = "no CPU ceilings in env.json"
            return e
        e.peak_gflops, e.peak_gbs = c
        model = (env.get("host") or {}).get("cpu_model") if isinstance(env.get("host"), dict) else None
        e.device = f"CPU {model or '?'} ({host})"
    elif kind == "gpu":
        ids = gpu_ids(g.devices)
        if ids is None:
            e.note = f"devices '{g.devices}': GPUs on several nodes, no single-host ceiling"
            return e
        c, why = gpu_ceiling(ceil.get("gpus"), ids, g.precision)
        if c is None:
            e.note = why or (ceil.get("gpu_reason") or "no GPU ceilings")
            return e
        e.peak_gflops, e.peak_gbs, names = c
        e.device = f"GPU {'/'.join(str(n) for n in names)} ({host})"
    else:
        e.note = f"device_kind '{kind}' has no ceiling"
        return e
    if e.intensity is None:
        e.note = "bytes per sample not computable (drop_last with batch > rows)"
        return e
    e.roof_gflops, e.bound, e.fraction, e.over = roofline(e.gflops, e.intensity, e.peak_gflops, e.peak_gbs)
    if e.over:
        e.note = (f"ceiling under-measured: achieved {e.gflops:.4g} GFLOP/s > roofline "
                  f"{e.roof_gflops:.4g} GFLOP/s")
    return e


def _env_by_run(summary):
    out = {}
    for run in summary.runs:
        for rid in run.run_ids or [run.run_id]:
            out.setdefault(rid, run.env)
    return out


def analyse(summary):
    """[(Workload, Group, Efficiency)] for every configuration, in report order."""
    envs = _env_by_run(summary)
    return [(w, g, of_group(g, envs.get(g.run_id, {}))) for w in summary.workloads for g in w.groups]


def _num(v):
    return None if v is None else float(v)


def figures(summary):
    """Plain data for summary.json: per configuration the FLOPs and bytes per sample,
    achieved GFLOP/s and GB/s, the ceilings used and % of roofline (None when over or
    unknown, with the note saying why); per run the ceilings env.json holds."""
    configs = []
    for w, g, e in analyse(summary):
        configs.append({
            "run_id": g.run_id, "workload": w.name, "backend": g.backend, "world_size": g.world_size,
            "devices": g.devices, "threads": g.threads, "settings": g.settings, "label": g.label(),
            "flops_per_sample": _num(e.flops), "bytes_per_sample": _num(e.bytes),
            "arithmetic_intensity_flop_per_byte": _num(e.intensity),
            "achieved_gflops": _num(e.gflops), "achieved_gbs": _num(e.gbs),
            "ceiling_gflops": _num(e.peak_gflops), "ceiling_gbs": _num(e.peak_gbs),
            "roofline_gflops": _num(e.roof_gflops), "bound": e.bound,
            "percent_of_roofline": None if e.fraction is None else 100.0 * e.fraction,
            "ceiling_under_measured": e.over, "device": e.device, "note": e.note or None,
        })
    ceilings = {}
    for run in summary.runs:
        c, why = ceilings_of(run.env)
        ceilings[run.run_id] = c if c is not None else {"omitted": why}
    return {"units": {"flops_per_sample": "FLOP", "bytes_per_sample": "B",
                      "arithmetic_intensity_flop_per_byte": "FLOP/B", "achieved_gflops": "1e9 FLOP/s",
                      "achieved_gbs": "1e9 B/s", "ceiling_gflops": "1e9 FLOP/s", "ceiling_gbs": "1e9 B/s",
                      "roofline_gflops": "1e9 FLOP/s", "percent_of_roofline": "%"},
            "formulas": dict(FORMULAS), "configurations": configs, "ceilings": ceilings}
