"""Group repetition rows into configurations and compute every derived figure.

Why one module: the HTML tables, the plots and the compare gate must agree on
what "median samples/s" or "speedup" means, so each figure is computed once,
here, from the rows (the CSV never stores derived numbers). The formulas are
listed in FORMULAS and printed in the report.

A configuration (Group) is a run_id and the row's workload, setup and knob cells
(load.CONFIG_COLUMNS, from reports/schema.json): two runs that differ only by
--shuffle are two groups, labelled with the setting that tells them apart. Its ok
rows are its repetitions, its failed rows its failures (a configuration that failed in
every repetition is a Group without rows, in Workload.failed: plots and tables show
it where its figures would be, never as if it had not run); skipped rows are kept
apart (Workload.not_measured). Which group is the
CPU baseline, the GPU baseline, the oracle or a scaling base comes from the trait
columns (device_kind, parallelism, oracle, scaling_base, implementation), never
from a backend's name.

Weak scaling spans workloads: a family is the workloads named <stem>-x1,
<stem>-x2, ... <stem>-xN whose global batch and rows grow with N, so every rank
does the same work per step (WeakFamily, _weak_families()).
"""

import math
import re
from dataclasses import dataclass, field

import stats
from load import CONFIG_COLUMNS, KNOB_COLUMNS, PHASE_COLUMNS, TRAIT_COLUMNS, WORKLOAD_COLUMNS

LOSS_RTOL = 1e-3          # |loss - ref| / max(|ref|, LOSS_ABS_FLOOR) <= LOSS_RTOL is a match
ASYNC_LOSS_RTOL = 0.05    # the same for asynchronous rows (Hogwild!; harness kAsyncLossRelTol)
LOSS_ABS_FLOOR = 1e-12
CV_FLAG = 0.05            # CV of samples/s above this is flagged as noisy
OTHER_MIN_FRACTION = 0.01  # "other" time shown only when above 1% of the epoch

OURS = "trainbench"       # the implementation trait of this harness's rows (peers: pytorch)
PARALLELISM_ORDER = ["none", "dp", "ddp", "shm"]
# Shown as columns of their own, so never repeated in a configuration's label.
SHOWN_COLUMNS = ["workload", "backend", "world_size", "devices", "threads"]
WORKLOAD_META = [c for c in WORKLOAD_COLUMNS if c != "workload"]

FORMULAS = [
    ("time per epoch (s/epoch)", "median over repetitions of train_time_s / epochs"),
    ("samples/s", "median over repetitions of samples_per_s "
                  "(the harness writes samples_per_s = epochs × rows per epoch / train_time_s)"),
    ("min–max", "smallest and largest samples_per_s of the repetitions"),
    ("CV", "sample standard deviation (n−1) / mean of samples_per_s over the repetitions; "
           f"flagged ⚠ above {CV_FLAG:.0%}; needs at least 2 repetitions"),
    ("speedup vs the fastest CPU", "median samples/s of the row / median samples/s of the "
                                   "fastest CPU configuration of the same workload: among "
                                   "trainbench rows with device_kind cpu (any parallelism, "
                                   "threads or ranks: cpu-omp, cpu-ddp, cpu-hogwild, ...), "
                                   "the one with the highest median samples/s, the same run "
                                   "and workload cells preferred; the oracle (the float64 "
                                   "reference, a correctness anchor), the PyTorch peers and "
                                   "rows whose loss check failed are never the baseline; the "
                                   "baseline is named in the column header and in the "
                                   "headline"),
    ("speedup vs the GPU baseline", "median samples/s of the row / median samples/s of the "
                                    "trainbench row with device_kind gpu, parallelism none at "
                                    "world_size 1 (cuda) in the same workload"),
    ("scaling efficiency", "(median samples/s / median samples/s of the base at world_size 1) "
                           "/ world_size; the base is the row's scaling_base column (cuda for "
                           "cuda-dp and cuda-ddp; cpu-omp for cpu-ddp and cpu-hogwild; torch-cuda "
                           "for torch-dp and torch-ddp on GPUs; torch-cpu for torch-ddp on CPUs and "
                           "torch-hogwild), the same backend when it is empty or has no such row; "
                           "the same run, workload cells and threads preferred (threads per rank "
                           "or per worker); shown for world_size > 1 (Hogwild!: workers); 100% is "
                           "ideal"),
    ("ideal scaling line", "base samples/s at world_size 1 × world_size"),
    ("weak-scaling efficiency", "for a family of workloads <stem>-x1, <stem>-x2, …, <stem>-xN "
                                "(global batch and rows × N, the same work per rank): median "
                                "samples/s at N / (N × median samples/s of the base), the base "
                                "being the same backend and threads at world_size 1 in "
                                "<stem>-x1 of the same run (else its scaling_base, e.g. cuda for "
                                "cuda-ddp); a row whose world_size is "
                                "not its workload's N is ignored; 100% is ideal"),
    ("per-rank batch, samples/s per rank", "batch_size / N and median samples/s / N, "
                                           "for a weak-scaling row at N ranks"),
    ("phase seconds per epoch", "median over repetitions of <phase>_s / epochs, for transfer, "
                                "forward, backward, comm (exposed), optimizer; "
                                "other = time per epoch − sum of phases when above "
                                f"{OTHER_MIN_FRACTION:.0%} of it"),
    ("final loss / accuracy", "median over repetitions of final_loss / final_accuracy"),
    ("loss check", f"rel = |loss − loss_ref| / max(|loss_ref|, {LOSS_ABS_FLOOR:g}); "
                   f"✓ when rel ≤ {LOSS_RTOL:g} (LOSS_RTOL), ✗ MISMATCH otherwise; loss_ref is "
                   "the final loss of the oracle (the float64 reference) with the same workload "
                   "cells (model, data, batch, epochs, shuffle, ...)"),
    ("asynchronous loss check", "rows whose asynchronous column is true (Hogwild!: cpu-hogwild, "
                                "torch-hogwild) apply updates without synchronisation, so they "
                                "match neither bit for bit nor to float rounding: the same rel, "
                                f"✓ when rel ≤ {ASYNC_LOSS_RTOL:g} (ASYNC_LOSS_RTOL); not checked "
                                "with momentum at world_size > 1 (asynchrony adds momentum of its "
                                "own, README \"Hogwild!\")"),
    ("loss curve", "per epoch, the median over repetitions of train_loss "
                   "(mean of that epoch's step losses)"),
    ("curves coincide", "two loss curves with the same epochs whose values differ by at most "
                        "CURVE_RTOL (0.1%) of the larger at every epoch; drawn once, the legend "
                        "naming every configuration"),
    ("loss change over training", "(largest − smallest loss of all curves) / largest; below "
                                  "FLAT_CHANGE (1%) the y-axis starts at 0 so that a flat curve "
                                  "looks flat"),
    ("disturbed", "a configuration with at least one repetition whose disturbed column is "
                  "true: other processes (others_cpu_share) or the hypervisor (steal_share) "
                  "took more than 5% of the host's CPU time during its timed epochs"),
    ("samples/J", "median over repetitions of samples_per_s × train_time_s / gpu_energy_j "
                  "(= epochs × rows per epoch / joules the run's GPUs used over the timed "
                  "epochs, NVML's energy counter); GPU rows with an energy reading only"),
    ("throttled", "a GPU row any of whose repetitions saw a power reason (sw_power_cap, "
                  "hw_power_brake_slowdown) or a thermal one (sw_thermal_slowdown, "
                  "hw_thermal_slowdown) in gpu_throttle_reasons, or hw_slowdown (either); "
                  "flagged ⚠: its clocks were held down, so its speed is not the GPU's best"),
]

# gpu_throttle_reasons names (harness/nvml.h) that mean power or thermal throttling.
POWER_REASONS = ("sw_power_cap", "hw_power_brake_slowdown")
THERMAL_REASONS = ("sw_thermal_slowdown", "hw_thermal_slowdown")
EITHER_REASONS = ("hw_slowdown",)  # NVML: high temperature or power draw (or a brake)


def throttle_kinds(reasons):
    """'power', 'thermal' (or both, 'power/thermal') named by a gpu_throttle_reasons cell; '' if none."""
    names = set((reasons or "").split("|"))
    power = bool(names & set(POWER_REASONS + EITHER_REASONS))
    thermal = bool(names & set(THERMAL_REASONS + EITHER_REASONS))
    return "/".join(k for k, on in (("power", power), ("thermal", thermal)) if on)


@dataclass
class Group:
    """One configuration and its repetitions, with derived figures filled in."""
    run_id: str
    host: str
    workload: str
    backend: str
    world_size: int
    devices: str
    threads: int
    config: dict = field(default_factory=dict)   # CONFIG_COLUMNS -> value: the identity
    traits: dict = field(default_factory=dict)   # TRAIT_COLUMNS -> value
    rows: list = field(default_factory=list)     # its ok rows: the repetitions measured
    failures: list = field(default_factory=list)  # its failed rows (repetitions that failed)
    origin: str = ""          # host (or run_id when hosts repeat) shown in merged reports
    settings: str = ""        # the cells that tell it from look-alikes: "shuffle=true"
    color: int = 0            # palette index: one per backend across the report
    # filled by _stats()
    sps: list = field(default_factory=list)
    med_sps: float = 0.0
    min_sps: float = 0.0
    max_sps: float = 0.0
    cv_sps: float = None
    time_per_epoch: float = 0.0
    phases: dict = field(default_factory=dict)   # phase name -> seconds per epoch
    final_loss: float = None
    final_accuracy: float = None
    precision: str = ""
    curve: list = field(default_factory=list)    # [(epoch, median train_loss)]
    disturbed_reps: int = 0                        # repetitions whose disturbed cell is true
    judged_reps: int = 0                           # repetitions whose disturbed cell is not empty
    others_share_max: float = None                 # largest others_cpu_share (fraction)
    steal_share_max: float = None                  # largest steal_share (fraction)
    samples_per_joule: float = None               # GPU rows with an energy reading (NVML)
    throttled: str = ""                           # "power", "thermal", "power/thermal" or ""
    throttle_reasons: str = ""                    # every reason seen, "|"-joined
    # filled by _compare_within_workload()
    cpu_base: "Group" = None
    gpu_base: "Group" = None
    ref: "Group" = None
    speedup_cpu: float = None
    speedup_gpu: float = None
    efficiency: float = None
    efficiency_base: "Group" = None
    loss_rel_err: float = None
    loss_state: str = "noref"                      # ref | match | mismatch | noref | unchecked
    # filled by _weak_families() for members of a weak-scaling family
    weak_n: int = None
    per_rank_batch: float = None
    weak_efficiency: float = None
    weak_base: "Group" = None

    @property
    def reps_total(self):
        """Repetitions that ran, measured or failed."""
        return len(self.rows) + len(self.failures)

    def failed_text(self):
        """'1 failed: rank 1 killed' for each distinct reason of its failed repetitions."""
        return "; ".join(f"{len(rs)} failed: {reason}" for reason, rs in by_reason(self.failures))

    def why_failed(self):
        """The distinct reasons of its failed repetitions: 'rank 1 killed; out of memory'."""
        return "; ".join(reason for reason, _ in by_reason(self.failures))

    @property
    def sps_per_rank(self):
        return self.med_sps / self.weak_n if self.weak_n else None

    @property
    def key(self):
        """Identity without the run: what compare matches across runs."""
        return config_key(self.config)

    @property
    def workload_cells(self):
        return tuple(self.config.get(c) for c in WORKLOAD_COLUMNS)

    @property
    def ours(self):
        return self.traits.get("implementation") == OURS

    @property
    def oracle(self):
        return bool(self.traits.get("oracle"))

    @property
    def asynchronous(self):
        return bool(self.traits.get("asynchronous"))

    @property
    def loss_rtol(self):
        """The loss check's tolerance: float rounding, or the asynchronous bound."""
        return ASYNC_LOSS_RTOL if self.asynchronous else LOSS_RTOL

    @property
    def disturbed(self):
        return self.disturbed_reps > 0

    @property
    def device_kind(self):
        return self.traits.get("device_kind")

    @property
    def noisy(self):
        return self.cv_sps is not None and self.cv_sps > CV_FLAG

    def label(self, with_origin=False):
        """Short name for plots: 'cuda-ddp ×4 (GPU 0,1,2,3)', 'cpu-omp (8 thr) shuffle=true'."""
        text = self.backend
        # A failed row's setup cells may be empty (only its identity is required).
        if (self.world_size or 1) > 1:
            text += f" ×{self.world_size}"
        if self.devices == "cpu":
            text += f" ({self.threads} thr)" if self.threads is not None else ""
        elif self.devices:
            text += f" (GPU {self.devices})"
        if self.settings:
            text += f" {self.settings}"
        return f"{self.origin}: {text}" if with_origin else text


@dataclass
class Workload:
    name: str
    groups: list                # configurations with at least one measured repetition
    not_measured: list          # skipped/failed rows of this workload
    meta: dict
    disagreements: list         # "epochs: 5, 10" when rows of one workload differ
    cpu_base: Group = None
    gpu_base: Group = None
    ref: Group = None
    multi_host: bool = False
    failed: list = field(default_factory=list)   # Groups without rows: failed in every repetition


@dataclass
class WeakFamily:
    """Workloads <stem>-xN sharing a stem; members are their groups at world_size N."""
    stem: str
    workloads: list             # member workload names, by N
    members: list               # Groups with weak_n set, by (machine, backend, threads, N)
    notes: list                 # plain text: ignored rows, missing bases, uneven per-rank batch
    multi_host: bool = False
    failed: list = field(default_factory=list)   # failed Groups at world size N, with weak_n set

    @property
    def shown(self):
        """Members and failed configurations together, in table order."""
        return sorted(self.members + self.failed, key=lambda g: _weak_order(g, self.multi_host))


@dataclass
class Summary:
    runs: list
    workloads: list
    skipped: list
    failed: list
    multi_host: bool
    weak: list = field(default_factory=list)   # WeakFamily, in first-appearance order


def by_reason(rows):
    """[(reason, [rows])] in first-appearance order: one entry per distinct reason."""
    out = {}
    for r in rows:
        out.setdefault(r["reason"], []).append(r)
    return list(out.items())


def config_key(cells):
    """The identity tuple of a configuration from its CONFIG_COLUMNS cells (a row or a dict)."""
    return tuple(cells.get(c) for c in CONFIG_COLUMNS)


def _order_key(g):
    """Ours before peers; the oracle first; CPU before GPU; none, dp, ddp; then by name."""
    par = g.traits.get("parallelism")
    return (not g.ours, not g.oracle, g.traits.get("device_kind") != "cpu",
            PARALLELISM_ORDER.index(par) if par in PARALLELISM_ORDER else len(PARALLELISM_ORDER),
            g.backend, g.world_size or 0, g.threads or 0, g.devices or "", g.settings)


def _stats(g):
    rows = g.rows
    g.sps = [r["samples_per_s"] for r in rows]
    g.med_sps = stats.median(g.sps)
    g.min_sps, g.max_sps = min(g.sps), max(g.sps)
    g.cv_sps = stats.cv(g.sps)
    g.time_per_epoch = stats.median([r["train_time_s"] / r["epochs"] for r in rows])
    for col in PHASE_COLUMNS:
        # An empty phase was not measured (the PyTorch peers on GPUs): it counts as "other".
        g.phases[col[:-2]] = stats.median([(r[col] or 0.0) / r["epochs"] for r in rows])
    other = g.time_per_epoch - sum(g.phases.values())
    g.phases["other"] = other if other > OTHER_MIN_FRACTION * g.time_per_epoch else 0.0
    g.final_loss = stats.median([r["final_loss"] for r in rows])
    accs = [r["final_accuracy"] for r in rows if r["final_accuracy"] is not None]
    g.final_accuracy = stats.median(accs) if accs else None
    g.precision = "/".join(sorted({r["precision"] for r in rows}))
    # Rows written before the disturbance columns existed read as empty: not disturbed.
    g.disturbed_reps = sum(1 for r in rows if r.get("disturbed") is True)
    # Empty where the harness could not judge (a repetition too short for /proc/stat's ticks).
    g.judged_reps = sum(1 for r in rows if r.get("disturbed") is not None)
    for col, attr in (("others_cpu_share", "others_share_max"), ("steal_share", "steal_share_max")):
        vals = [r[col] for r in rows if r.get(col) is not None]
        setattr(g, attr, max(vals) if vals else None)
    # NVML figures (columns absent in older files read as empty).
    per_joule = [r["samples_per_s"] * r["train_time_s"] / r["gpu_energy_j"] for r in rows
                 if r.get("gpu_energy_j")]
    g.samples_per_joule = stats.median(per_joule) if per_joule else None
    seen = sorted({n for r in rows for n in (r.get("gpu_throttle_reasons") or "").split("|")
                   if n and n != "none"})
    g.throttle_reasons = "|".join(seen)
    g.throttled = throttle_kinds(g.throttle_reasons)


def cell_text(v):
    """A cell as the CSV writes it: true/false, numbers short, '' for empty."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def distinguishing(configs):
    """For configurations shown alike (same workload, backend, world size, devices,
    threads), the cells that tell each apart: a list of "col=value ..." strings, one
    per config dict, "" where nothing needs saying. An empty cell (a knob the backend
    does not take) is left out, not written "workers=": the look-alike with a value there
    says it, so the labels still differ."""
    shown = {}
    for i, c in enumerate(configs):
        shown.setdefault(tuple(c.get(k) for k in SHOWN_COLUMNS), []).append(i)
    out = [""] * len(configs)
    for idx in shown.values():
        if len(idx) < 2:
            continue
        differ = [col for col in CONFIG_COLUMNS if col not in SHOWN_COLUMNS
                  and len({cell_text(configs[i].get(col)) for i in idx}) > 1]
        for i in idx:
            out[i] = " ".join(f"{col}={cell_text(configs[i].get(col))}" for col in differ
                              if cell_text(configs[i].get(col)) != "")
    return out


def group_rows(rows, with_failed=False):
    """ok rows -> {(run_id, *config cells): Group}, each labelled with what tells it
    from groups that look alike; a group's failed rows are its failures. with_failed:
    also a Group without rows for each configuration that failed in every repetition
    (compare.py matches measured configurations only)."""
    groups = {}
    for r in rows:
        k = (r["run_id"],) + config_key(r)
        if r["state"] == "ok" or (r["state"] == "failed" and with_failed):
            groups.setdefault(k, Group(r["run_id"], r["host"], r["workload"], r["backend"],
                                       r["world_size"], r["devices"], r["threads"],
                                       config={c: r[c] for c in CONFIG_COLUMNS},
                                       traits={c: r[c] for c in TRAIT_COLUMNS}))
        if k in groups and r["state"] == "ok":
            groups[k].rows.append(r)
    for r in rows:   # after the ok rows: a failure before its configuration's first ok row
        k = (r["run_id"],) + config_key(r)
        if r["state"] == "failed" and k in groups:
            groups[k].failures.append(r)
    gs = list(groups.values())
    for g, text in zip(gs, distinguishing([g.config for g in gs])):
        g.settings = text
    for g in gs:
        if g.rows:
            _stats(g)
    return groups


def _attach_curves(groups, curves):
    per = {}
    for c in curves:
        k = (c["run_id"],) + config_key(c)
        per.setdefault(k, {}).setdefault(c["epoch"], []).append(c["train_loss"])
    for k, g in groups.items():
        if k in per:
            g.curve = [(e, stats.median(v)) for e, v in sorted(per[k].items())]


def _pick(groups, pred, prefer=(), key=None):
    """First group matching pred, narrowed by each `prefer` predicate in turn (one
    that matches none is ignored), then to the largest key(g) when key is given."""
    cands = [g for g in groups if pred(g)]
    for p in prefer:
        cands = [g for g in cands if p(g)] or cands
    if cands and key is not None:
        best = max(key(g) for g in cands)
        cands = [g for g in cands if key(g) == best]
    return cands[0] if cands else None


def loss_check(loss, ref_loss, rtol=LOSS_RTOL):
    """(relative error, state) of a final loss against the reference's."""
    if ref_loss is None:
        return None, "noref"
    rel = abs(loss - ref_loss) / max(abs(ref_loss), LOSS_ABS_FLOOR)
    if math.isnan(rel):
        return rel, "mismatch"
    return rel, "match" if rel <= rtol else "mismatch"


def is_cpu_candidate(g):
    """A CPU configuration that may be the speedup baseline: ours (not a PyTorch peer), on
    the CPU (any parallelism: threads, ranks or Hogwild! workers), not the oracle (the
    float64 reference is a correctness anchor, slow on purpose), and not a row whose loss
    check failed (a baseline that learned something else is no baseline)."""
    return g.ours and not g.oracle and g.traits.get("device_kind") == "cpu" and \
        g.loss_state != "mismatch"


def is_cpu_candidate_row(r):
    """A result row (any state) of a configuration that could be the CPU baseline, by the
    trait cells is_cpu_candidate reads (a row that did not run has no loss check): to say
    that such rows were skipped, not that there were none."""
    return r.get("implementation") == OURS and r.get("device_kind") == "cpu" and not r.get("oracle")


def is_cpu_baseline(g):
    """Kept for callers that ask whether g may be a CPU baseline."""
    return is_cpu_candidate(g)


def is_gpu_baseline(g):
    return g.ours and g.traits.get("device_kind") == "gpu" and \
        g.traits.get("parallelism") == "none" and g.world_size == 1


def scaling_base_name(g):
    """The backend g's scaling is measured against: its scaling_base trait, else itself."""
    return g.traits.get("scaling_base") or g.backend


def scaling_base_of(g, gs):
    """The world-size-1 group of gs that g (world size > 1) scales against: its
    scaling_base's backend, else its own; the same run first, then the same workload
    cells (shuffle...), then the same threads per rank (cpu-ddp ×2 at 4 threads scales
    against cpu-omp at 4). None when there is none."""
    prefer = (lambda b: b.run_id == g.run_id,
              lambda b: b.workload_cells == g.workload_cells,
              lambda b: b.threads == g.threads)
    base = _pick(gs, lambda b: b.backend == scaling_base_name(g) and b.world_size == 1, prefer)
    if base is None:
        base = _pick(gs, lambda b: b.backend == g.backend and b.world_size == 1, prefer)
    return base


def _compare_within_workload(w):
    gs = w.groups
    # The loss checks come first: a CPU row that failed its check is never the baseline.
    w.ref = _pick(gs, lambda g: g.oracle)
    for g in gs:
        g.ref = _pick(gs, lambda b: b.oracle and b.workload_cells == g.workload_cells,
                      (lambda b: b.run_id == g.run_id,))
        if g is g.ref:
            g.loss_rel_err, g.loss_state = 0.0, "ref"
        elif g.ref is not None:
            g.loss_rel_err, g.loss_state = loss_check(g.final_loss, g.ref.final_loss, g.loss_rtol)
            if g.asynchronous and g.world_size > 1 and g.config.get("momentum"):
                g.loss_state = "unchecked"  # asynchrony adds momentum of its own
    # The workload's baselines (table headers, headline); each group then prefers the
    # baseline of its own run that trained the same thing (workload cells: shuffle...).
    # The CPU baseline is the fastest CPU configuration, never one another CPU row beat.
    fastest = lambda g: g.med_sps  # noqa: E731
    w.cpu_base = _pick(gs, is_cpu_candidate, key=fastest)
    w.gpu_base = _pick(gs, is_gpu_baseline)
    for g in gs:
        same = (lambda b: b.run_id == g.run_id, lambda b: b.workload_cells == g.workload_cells)
        g.cpu_base = _pick(gs, is_cpu_candidate, same, key=fastest)
        g.gpu_base = _pick(gs, is_gpu_baseline, same[1:])
        if g.cpu_base:
            g.speedup_cpu = g.med_sps / g.cpu_base.med_sps
        if g.gpu_base:
            g.speedup_gpu = g.med_sps / g.gpu_base.med_sps
        if g.world_size > 1:
            base = scaling_base_of(g, gs)
            if base is not None:
                g.efficiency_base = base
                g.efficiency = g.med_sps / base.med_sps / g.world_size


WEAK_NAME = re.compile(r"^(?P<stem>.+)-x(?P<n>\d+)$")


def weak_name(name):
    """'weak-mlp-x4' -> ('weak-mlp', 4); None when the name has no -xN suffix."""
    m = WEAK_NAME.match(name)
    return (m["stem"], int(m["n"])) if m else None


# The cells that stay the same along a weak-scaling line (N, rows, batch and devices grow).
WEAK_SERIES_COLUMNS = ["backend", "threads", "precision", "shuffle", "drop_last", "epochs",
                       "warmup", *KNOB_COLUMNS]


def _series_cells(g):
    return tuple(g.config.get(c) for c in WEAK_SERIES_COLUMNS)


def weak_series_label(g, with_origin=False):
    """One line of a weak-scaling family: 'cuda-ddp', 'cpu-ddp (4 thr)', 'box: cuda-ddp'."""
    text = g.backend + (f" ({g.threads} thr)" if g.devices == "cpu" else "")
    if g.settings:
        text += f" {g.settings}"
    return f"{g.origin}: {text}" if with_origin else text


def _weak_base(g, bases):
    """g's world-size-1 row in <stem>-x1 of the same run: the same backend, threads and
    settings, else its scaling_base's backend (cuda for cuda-ddp), preferring the same
    threads."""
    base = _pick(bases, lambda b: b.run_id == g.run_id and b.backend == g.backend
                 and b.threads == g.threads, (lambda b: _series_cells(b) == _series_cells(g),))
    alt = g.traits.get("scaling_base")
    if base is None and alt:
        base = _pick(bases, lambda b: b.run_id == g.run_id and b.backend == alt,
                     (lambda b: b.threads == g.threads,))
    return base


def _weak_family(stem, members_by_n, multi_host):
    fam = WeakFamily(stem, [w.name for _, w in members_by_n], [], [], multi_host)
    for n, w in members_by_n:
        for g in w.groups:
            if g.world_size != n:
                fam.notes.append(f"{w.name}: {g.label(multi_host)} ignored — world size "
                                 f"{g.world_size} is not the {n} of the name")
                continue
            g.weak_n = n
            g.per_rank_batch = g.rows[0]["batch_size"] / n
            fam.members.append(g)
        for g in w.failed:
            if g.world_size == n:   # shown at its N, failed (a row that is no member is ignored)
                g.weak_n = n
                fam.failed.append(g)
    bases = [g for g in fam.members if g.weak_n == 1]
    has_x1 = any(n == 1 for n, _ in members_by_n)
    if not has_x1:
        fam.notes.append(f"no {stem}-x1 workload: no base, efficiency not computed")
    series = {}
    for g in fam.members:
        series.setdefault((g.run_id, _series_cells(g)), []).append(g)
        g.weak_base = _weak_base(g, bases)
        if g.weak_base is not None:
            g.weak_efficiency = g.med_sps / (g.weak_n * g.weak_base.med_sps)
    failed_bases = [g for g in fam.failed if g.weak_n == 1]
    for gs in series.values():
        label = weak_series_label(gs[0], multi_host)
        if has_x1 and gs[0].weak_base is None:
            # A base that failed is not a missing one: say why there is no efficiency.
            failed = _weak_base(gs[0], failed_bases)
            why = (f"its base {failed.label(multi_host)} in {stem}-x1 failed: {failed.why_failed()}"
                   if failed else f"no base row at world size 1 in {stem}-x1")
            fam.notes.append(f"{label}: {why}, efficiency not computed")
        batches = sorted({g.per_rank_batch for g in gs})
        if len(batches) > 1:
            fam.notes.append(f"{label}: per-rank batch differs across N "
                             f"({', '.join(f'{b:g}' for b in batches)}) — not weak scaling")
    fam.members.sort(key=lambda g: _weak_order(g, multi_host))
    fam.failed.sort(key=lambda g: _weak_order(g, multi_host))
    return fam


def _weak_order(g, multi_host):
    """By machine, backend (as _order_key), threads, settings, then N."""
    return (g.origin if multi_host else "", _order_key(g)[:5], g.threads, g.settings, g.weak_n,
            g.devices)


def _weak_families(workloads, multi_host):
    """Stems shared by at least two workloads named <stem>-xN -> WeakFamily list."""
    stems = {}
    for w in workloads:
        parsed = weak_name(w.name)
        if parsed:
            stems.setdefault(parsed[0], []).append((parsed[1], w))
    return [_weak_family(stem, sorted(ws, key=lambda t: t[0]), multi_host)
            for stem, ws in stems.items() if len(ws) > 1]


def _disagreements(rows):
    out = []
    for col in WORKLOAD_META:
        values = []
        for r in rows:
            if r["state"] == "ok" and r[col] not in values:
                values.append(r[col])
        if len(values) > 1:
            out.append(f"{col}: " + ", ".join(cell_text(v) for v in values))
    return out


def summarize(runs):
    """All runs -> Summary with workloads in first-appearance order."""
    all_rows = [r for run in runs for r in run.rows]
    everything = group_rows(all_rows, with_failed=True)
    groups = {k: g for k, g in everything.items() if g.rows}
    failed = [g for g in everything.values() if not g.rows]
    for run in runs:
        _attach_curves(groups, run.curves)
    run_hosts = {}
    for r in all_rows:
        run_hosts.setdefault(r["run_id"], r["host"])
    multi_host = len(run_hosts) > 1
    hosts_unique = len(set(run_hosts.values())) == len(run_hosts)
    for g in everything.values():
        g.origin = g.host if hosts_unique else g.run_id
    # One colour per backend across the report, in display order (measured ones first, so
    # a backend that only failed does not move the others' colours).
    backends = []
    for g in sorted(groups.values(), key=_order_key) + sorted(failed, key=_order_key):
        if g.backend not in backends:
            backends.append(g.backend)
    for g in everything.values():
        g.color = backends.index(g.backend)
    names = []
    for r in all_rows:
        if r["workload"] not in names:
            names.append(r["workload"])
    workloads = []
    for name in names:
        rows = [r for r in all_rows if r["workload"] == name]
        ok = [r for r in rows if r["state"] == "ok"]
        meta_src = ok[0] if ok else rows[0]
        w = Workload(
            name=name,
            groups=sorted((g for g in groups.values() if g.workload == name), key=_order_key),
            not_measured=[r for r in rows if r["state"] != "ok"],
            meta={c: meta_src[c] for c in WORKLOAD_META},
            disagreements=_disagreements(rows),
            multi_host=multi_host,
            failed=sorted((g for g in failed if g.workload == name), key=_order_key))
        _compare_within_workload(w)
        workloads.append(w)
    return Summary(runs=runs, workloads=workloads,
                   skipped=[r for r in all_rows if r["state"] == "skipped"],
                   failed=[r for r in all_rows if r["state"] == "failed"],
                   multi_host=multi_host, weak=_weak_families(workloads, multi_host))
