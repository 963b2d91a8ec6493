"""The Google Benchmark JSON files `make bench` leaves in a run folder, as report tables.

Why: the kernels' own rates (GEMM GFLOP/s, elementwise bytes/s) explain the training
rows, so the report shows them beside the runs. Files: <run>/microbench-cpu.json
(tb_microbench_cpu) and, where built on a GPU machine, microbench_cuda.json
(tb_microbench_cuda); any microbench[-_]*.json is read. One table per binary: name,
wall time with its unit, CPU time, iterations and every counter, labelled with its
unit. Counters are read as numbers whatever their form: a plain value named with its
unit ("GFLOP/s": shown as is), a rate without a prefix ("FLOP/s", or Google
Benchmark's bytes_per_second / items_per_second: shown with an SI prefix). With
--benchmark_repetitions only the median aggregates are shown (a benchmark without
repetitions in the same file, its own row). An aggregate's "iterations" is its count of
repetitions, not iterations: the table shows the iterations of each repetition (from
the repetitions' own rows) and how many repetitions.

A file that cannot be read is reported in the section, not fatal: the training rows
are the report's subject and stay readable.
"""

import glob
import json
import math
import os
from dataclasses import dataclass, field
from html import escape as esc

# Keys of a benchmark entry that are not counters.
STANDARD_KEYS = {"name", "family_index", "per_family_instance_index", "run_name", "run_type",
                 "repetitions", "repetition_index", "threads", "iterations", "real_time", "cpu_time",
                 "time_unit", "aggregate_name", "aggregate_unit", "label", "error_occurred",
                 "error_message", "skipped", "skip_message", "big_o", "rms",
                 "iterations_per_repetition"}
RENAMED = {"bytes_per_second": "B/s", "items_per_second": "items/s"}
SI = [("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)]
PATTERNS = ("microbench-*.json", "microbench_*.json")


@dataclass
class BenchFile:
    path: str
    binary: str = ""
    context: dict = field(default_factory=dict)
    rows: list = field(default_factory=list)      # benchmark entries shown
    counters: list = field(default_factory=list)  # counter keys, first-seen order
    error: str = ""


def counter_unit(key):
    """(unit label, apply an SI prefix) for a counter key."""
    unit = RENAMED.get(key, key)
    if unit.endswith("/s") and not any(unit.startswith(p) and len(unit) > len(p) + 2 and unit[1].isupper()
                                       for p, _ in SI):
        return unit, True
    return unit, False


def format_counter(key, value):
    """'295.3 GFLOP/s' for ('GFLOP/s', 295.3) and for ('FLOP/s', 2.953e11); '12.5 GB/s' for
    ('bytes_per_second', 1.25e10); '3' for a counter without a rate unit ('3 x' keeps its name)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return "–"
    unit, prefix = counter_unit(key)
    if prefix:
        for p, size in SI:
            if abs(value) >= size:
                return f"{value / size:.4g} {p}{unit}"
        return f"{value:.4g} {unit}"
    if unit.endswith("/s"):
        return f"{value:.4g} {unit}"
    return f"{value:.4g}"


def read(path):
    """One JSON file -> BenchFile (error set instead of raising)."""
    bf = BenchFile(path=path, binary=os.path.basename(path))
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        bf.error = f"{path}: cannot be read as Google Benchmark JSON ({e})"
        return bf
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        bf.error = f"{path}: no 'benchmarks' list (not Google Benchmark JSON)"
        return bf
    bf.context = doc.get("context") if isinstance(doc.get("context"), dict) else {}
    if bf.context.get("executable"):
        bf.binary = os.path.basename(str(bf.context["executable"]))
    entries = [b for b in doc["benchmarks"] if isinstance(b, dict) and "name" in b]
    bf.rows = shown_rows(entries)
    entries = bf.rows
    for b in entries:
        for k, v in b.items():
            if k not in STANDARD_KEYS and isinstance(v, (int, float)) and not isinstance(v, bool) \
                    and k not in bf.counters:
                bf.counters.append(k)
    return bf


def _run_name(b):
    """The benchmark a row belongs to: run_name ('BM_x' for BM_x_median too); files from
    Google Benchmark before run_name: the name less the aggregate's '_median' suffix."""
    if isinstance(b.get("run_name"), str):
        return b["run_name"]
    suffix = f"_{b.get('aggregate_name')}"
    name = str(b["name"])
    return name[:-len(suffix)] if b.get("run_type") == "aggregate" and name.endswith(suffix) else name


def shown_rows(entries):
    """The median aggregate of each repeated benchmark, the plain row of any other, in file
    order. An aggregate row's "iterations" is the number of repetitions (Google Benchmark
    writes it so): the copy shown has iterations = the iterations of each repetition
    (None when they differ or the file holds no repetition rows: aggregates only),
    iterations_per_repetition = their distinct values, and repetitions."""
    medians = {_run_name(b) for b in entries
               if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"}
    per_rep = {}
    for b in entries:
        if b.get("run_type") != "aggregate" and isinstance(b.get("iterations"), int):
            per_rep.setdefault(_run_name(b), set()).add(b["iterations"])
    out = []
    for b in entries:
        name = _run_name(b)
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                iters = sorted(per_rep.get(name, ()))
                reps = b.get("repetitions") if isinstance(b.get("repetitions"), int) else b.get("iterations")
                out.append(dict(b, iterations=iters[0] if len(iters) == 1 else None,
                                iterations_per_repetition=iters, repetitions=reps))
        elif name not in medians:
            out.append(b)
    return out


def iterations_text(b):
    """'1000' for a plain row; '1000 × 3 repetitions' for a median, '980–1000 × 3
    repetitions' when they differ, '– × 3 repetitions' when the file lacks them."""
    if "iterations_per_repetition" not in b:
        return str(b.get("iterations", "–"))
    iters = b["iterations_per_repetition"]
    each = "–" if not iters else str(iters[0]) if len(iters) == 1 else f"{iters[0]}–{iters[-1]}"
    return f"{each} × {b.get('repetitions', '?')} repetitions"


def find(run_dir):
    """Every micro-benchmark JSON file of a run folder, sorted by name."""
    paths = set()
    for pattern in PATTERNS:
        paths.update(glob.glob(os.path.join(run_dir, pattern)))
    return [read(p) for p in sorted(paths)]


def _time(b, key):
    v = b.get(key)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return "–"
    text = f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:.4g}"
    return f"{text} {b.get('time_unit', 'ns')}"


def table_html(bf):
    head = ["benchmark", "wall time per iteration", "CPU time per iteration", "iterations"]
    head += [counter_unit(k)[0] for k in bf.counters]
    out = ['<div class="scroll"><table class="results"><tr>'
           + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"]
    for b in bf.rows:
        if b.get("error_occurred"):
            out.append(f"<tr><td>{esc(str(b['name']))}</td><td class=\"bad wrap\" colspan=\"{len(head) - 1}\">"
                       f"error: {esc(str(b.get('error_message', '')))}</td></tr>")
            continue
        cells = [f"<td>{esc(str(b['name']))}</td>", f'<td class="num">{esc(_time(b, "real_time"))}</td>',
                 f'<td class="num">{esc(_time(b, "cpu_time"))}</td>',
                 f'<td class="num">{esc(iterations_text(b))}</td>']
        cells += [f'<td class="num">{esc(format_counter(k, b.get(k)))}</td>' for k in bf.counters]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table></div>")
    return "".join(out)


def section_html(runs):
    """The report's micro-benchmark section for every run folder, '' when none has files."""
    parts = []
    for run in runs:
        for bf in find(run.path):
            if bf.error:
                parts.append(f'<p class="warn">{esc(bf.error)}</p>')
                continue
            ctx = bf.context
            meta = " · ".join(str(x) for x in (
                f"run {run.run_id}", bf.path, ctx.get("host_name"), ctx.get("date"),
                f"{ctx['num_cpus']} CPUs" if ctx.get("num_cpus") else None,
                f"library {ctx['library_build_type']} build" if ctx.get("library_build_type") else None)
                if x)
            parts.append(f"<h3>{esc(bf.binary)}</h3><p class=\"meta\">{esc(meta)}</p>")
            parts.append(table_html(bf) if bf.rows else '<p class="muted">no benchmarks in the file</p>')
    if not parts:
        return ""
    return ('<section id="microbench"><h2>Micro-benchmarks</h2>'
            '<p>Google Benchmark JSON written by <code>make bench</code> beside results.csv '
            "(time per iteration in the unit shown; rate counters as the binaries define them, "
            "with their units; medians where repeated).</p>" + "".join(parts) + "</section>")
