"""Micro-benchmark tables (reports/microbench.py) from Google Benchmark JSON in a run
folder: both counter forms (a value named with its prefixed unit, GFLOP/s, and a rate
without prefix, FLOP/s or bytes_per_second) read as numbers with their units; medians
only when repeated; a broken file is a warning, not a failed report. And `make bench`
writes the JSON into the run folder before it renders the report.
"""

import json
import os
import re

import fixture_data as fx
import microbench as mb
import render
from htmltables import section as section_of, tables

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def bench(name, real, **counters):
    return dict(name=name, run_name=name, run_type="iteration", repetitions=1, repetition_index=0,
                threads=1, iterations=1000, real_time=real, cpu_time=real * 1.9, time_unit="us",
                **counters)


def write(folder, name, benchmarks, executable="/x/build/bench/tb_microbench_cpu"):
    doc = {"context": {"date": "2026-11-23T18:00:00+00:00", "host_name": "cpubox", "executable": executable,
                       "num_cpus": 2, "library_build_type": "release"},
           "benchmarks": benchmarks}
    with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
        json.dump(doc, f)


def _section_tables(html):
    section = section_of(html, "microbench")
    return section, tables(section)


def test_counters_of_both_forms_are_shown_with_units(tmp_path):
    folder = fx.write_run(tmp_path / "cpu", "cpubox")
    write(folder, "microbench-cpu.json", [
        bench("BM_gemm_cpu/large/NN/1024x1024x4096", 12.34, **{"GFLOP/s": 295.3}),
        bench("BM_gemm_cpu/rate/NN/64x64x64", 1.5, **{"FLOP/s": 2.953e11}),
        bench("BM_relu_cpu/256x256", 0.75, bytes_per_second=1.25e10),
    ])
    assert render.main([folder]) == 0
    html = open(os.path.join(folder, "report.html"), encoding="utf-8").read()
    section, (table,) = _section_tables(html)
    assert "<h3>tb_microbench_cpu</h3>" in section
    rows = {r["benchmark"]: r for r in table}
    large = rows["BM_gemm_cpu/large/NN/1024x1024x4096"]
    assert large["wall time per iteration"] == "12.34 us"
    assert large["CPU time per iteration"] == "23.45 us"
    assert large["iterations"] == "1000"
    assert large["GFLOP/s"] == "295.3 GFLOP/s"
    assert rows["BM_gemm_cpu/rate/NN/64x64x64"]["FLOP/s"] == "295.3 GFLOP/s"
    assert rows["BM_relu_cpu/256x256"]["B/s"] == "12.5 GB/s"
    assert large["B/s"] == "–"
    assert '<a href="#microbench">' in html


def test_repetitions_show_the_median_aggregate_only(tmp_path):
    folder = fx.write_run(tmp_path / "cpu", "cpubox")
    reps = [bench("BM_x", t, **{"GFLOP/s": g}) for t, g in ((1.0, 10.0), (2.0, 5.0), (1.5, 7.0))]
    agg = [dict(bench("BM_x_" + a, t, **{"GFLOP/s": g}), run_name="BM_x", run_type="aggregate",
                aggregate_name=a)
           for a, t, g in (("mean", 1.5, 7.33), ("median", 1.5, 7.0), ("stddev", 0.5, 2.5))]
    write(folder, "microbench_cuda.json", reps + agg, executable="tb_microbench_cuda")
    files = mb.find(folder)
    assert [f.binary for f in files] == ["tb_microbench_cuda"]
    assert [b["name"] for b in files[0].rows] == ["BM_x_median"]


def _repeated(name, iterations=(1000, 1000, 1000)):
    """A benchmark run with --benchmark_repetitions=3 as Google Benchmark writes it: one row
    per repetition, then the aggregates, whose "iterations" is the count of repetitions."""
    reps = [dict(bench(name, 1.0 + i, **{"GFLOP/s": 10.0 - i}), repetitions=3, repetition_index=i,
                 iterations=n) for i, n in enumerate(iterations)]
    agg = [dict(bench(f"{name}_{a}", t, **{"GFLOP/s": g}), run_name=name, run_type="aggregate",
                aggregate_name=a, aggregate_unit="time", repetitions=3, iterations=3)
           for a, t, g in (("mean", 2.0, 9.0), ("median", 2.0, 9.0), ("stddev", 1.0, 1.0))]
    return reps + agg


def test_a_median_row_shows_the_iterations_of_each_repetition_not_their_count(tmp_path):
    """An aggregate row's iterations is its number of repetitions: the table said 3
    iterations for a median over 3 repetitions of 1000."""
    folder = fx.write_run(tmp_path / "cpu", "cpubox")
    write(folder, "microbench-cpu.json", _repeated("BM_a") + _repeated("BM_b", (500, 520, 500))
          + [dict(bench("BM_once", 4.0), run_name="BM_once")])
    html = fx.render_html(folder)
    _, (table,) = _section_tables(html)
    rows = {r["benchmark"]: r["iterations"] for r in table}
    # A benchmark without repetitions in the same file keeps its own row.
    assert rows == {"BM_a_median": "1000 × 3 repetitions", "BM_b_median": "500–520 × 3 repetitions",
                    "BM_once": "1000"}
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as f:
        (entry,) = json.load(f)["microbenchmarks"]
    got = {b["name"]: (b["iterations"], b.get("repetitions")) for b in entry["benchmarks"]}
    assert got == {"BM_a_median": (1000, 3), "BM_b_median": (None, 3), "BM_once": (1000, 1)}


def test_a_file_of_aggregates_only_does_not_invent_iterations(tmp_path):
    """--benchmark_report_aggregates_only: no repetition rows, so iterations are unknown."""
    folder = fx.write_run(tmp_path / "cpu", "cpubox")
    write(folder, "microbench-cpu.json", [b for b in _repeated("BM_a") if b["run_type"] == "aggregate"])
    (bf,) = mb.find(folder)
    assert [mb.iterations_text(b) for b in bf.rows] == ["– × 3 repetitions"]


def test_errors_and_broken_files_are_reported_not_fatal(tmp_path):
    folder = fx.write_run(tmp_path / "cpu", "cpubox")
    write(folder, "microbench-cpu.json", [dict(bench("BM_bad", 1.0), error_occurred=True,
                                               error_message="result differs from the naive loop")])
    with open(os.path.join(folder, "microbench_cuda.json"), "w") as f:
        f.write("{not json")
    assert render.main([folder]) == 0
    html = open(os.path.join(folder, "report.html"), encoding="utf-8").read()
    section, _ = _section_tables(html)
    assert "error: result differs from the naive loop" in section
    assert "microbench_cuda.json: cannot be read as Google Benchmark JSON" in section


def test_no_files_no_section(tmp_path):
    folder = fx.write_run(tmp_path / "cpu", "cpubox")
    assert render.main([folder]) == 0
    assert 'id="microbench"' not in open(os.path.join(folder, "report.html"), encoding="utf-8").read()


def test_format_counter():
    assert mb.format_counter("GFLOP/s", 1234.0) == "1234 GFLOP/s"
    assert mb.format_counter("FLOP/s", 1.5e12) == "1.5 TFLOP/s"
    assert mb.format_counter("items_per_second", 3e6) == "3 Mitems/s"
    assert mb.format_counter("bytes_per_second", 512.0) == "512 B/s"
    assert mb.format_counter("GB/s", 12.0) == "12 GB/s"
    assert mb.format_counter("tiles", 3) == "3"
    assert mb.format_counter("GFLOP/s", float("nan")) == "–"


def _bench_recipe():
    text = open(os.path.join(REPO, "Makefile"), encoding="utf-8").read()
    recipe = text.split("\nbench: ", 1)[1]
    return recipe.split("\n\n", 1)[0]


def test_make_bench_keeps_the_json_in_the_run_and_renders_after_the_micro_benchmarks():
    recipe = _bench_recipe()
    cpu = recipe.index("--benchmark_out=$(RESULTS)/microbench-cpu.json")
    cuda = recipe.index("--benchmark_out=$(RESULTS)/microbench_cuda.json")
    render_at = recipe.index("reports/render.py $(RESULTS)")
    assert "--benchmark_out_format=json" in recipe
    assert cpu < render_at and cuda < render_at
    assert len(re.findall(r"reports/render\.py", recipe)) == 1
