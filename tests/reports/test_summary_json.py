"""summary.json beside report.html: every figure the report shows, strict JSON, written
atomically, with sections that other report modules plug in with one line.

Expected values are computed by hand from fixture_data.THROUGHPUT.
"""

import json
import math
import os
import re

import pytest

import fixture_data as fx
import render
import summary_json

LIN, MLP = fx.LINEAR, fx.MLP


def _summary(folder, out=None):
    args = [str(folder)] + (["-o", str(out)] if out else [])
    assert render.main(args) == 0
    path = summary_json.path_beside(out or os.path.join(folder, "report.html"))
    with open(path, encoding="utf-8") as f:
        return json.load(f, parse_constant=lambda c: pytest.fail(f"non-strict JSON: {c}"))


def _config(doc, workload, label):
    w = next(w for w in doc["workloads"] if w["workload"] == workload)
    return next(c for c in w["configurations"] if c["label"] == label)


def test_gpu_figures_match_hand_computation(gpu_run):
    doc = _summary(gpu_run)
    assert doc["summary_schema_version"] == 1
    assert list(doc)[:2] == ["summary_schema_version", "generator"]
    assert {"runs", "headline", "workloads", "weak_scaling", "skipped", "failed",
            "disturbed"} <= set(doc)
    ddp4 = _config(doc, LIN, "cuda-ddp ×4 (GPU 0,1,2,3)")
    assert ddp4["median_samples_per_s"] == pytest.approx(720e6)
    assert ddp4["min_samples_per_s"] == pytest.approx(720e6 * 0.99)
    assert ddp4["speedup_vs_fastest_cpu"] == pytest.approx(720e6 / 8e6)        # 90
    assert ddp4["cpu_baseline"] == "cpu-omp (16 thr)"
    assert ddp4["speedup_vs_single_gpu"] == pytest.approx(3.6)
    assert ddp4["scaling_efficiency"] == pytest.approx(0.9)
    assert ddp4["scaling_base"] == "cuda (GPU 0)"
    assert ddp4["loss_check"] == "match" and ddp4["disturbed"] is False
    assert ddp4["time_per_epoch_s"] == pytest.approx(100000 / 720e6)
    line = doc["headline"]["workloads"][0]
    assert line["workload"] == LIN and doc["headline"]["gpu_ran"] is True
    assert line["fastest_cpu"]["label"] == "cpu-omp (16 thr)"
    assert line["fastest_single_gpu"]["speedup_vs_fastest_cpu"] == pytest.approx(25.0)
    assert line["fastest_multi_gpu"]["label"] == "cuda-ddp ×4 (GPU 0,1,2,3)"
    mlp = doc["headline"]["workloads"][1]
    assert mlp["fastest_multi_gpu"]["scaling_efficiency"] == pytest.approx(7 / 4 / 2)
    assert doc["skipped"]["count"] == 1
    assert doc["skipped"]["by_reason"][0]["reason"] == "NCCL not found (set NCCL_ROOT, then rebuild)"
    assert doc["disturbed"]["configurations"] == 0


def test_cpu_run_no_gpu_reasons_and_skipped_counts(cpu_run):
    doc = _summary(cpu_run)
    assert doc["headline"]["gpu_ran"] is False
    reasons = {r["reason"]: r["skipped_configurations"] for r in doc["headline"]["no_gpu_reasons"]}
    assert reasons == {"no CUDA device (cudaGetDeviceCount: no CUDA-capable device is detected)": 1,
                       "no CUDA device": 2}
    assert {r["reason"]: r["count"] for r in doc["skipped"]["by_reason"]} == reasons
    assert doc["failed"]["count"] == 1
    omp8 = _config(doc, LIN, "cpu-omp (8 thr)")
    assert omp8["speedup_vs_fastest_cpu"] == pytest.approx(5e6 / 5.22e6)
    assert omp8["cpu_baseline"] == "cpu-ddp ×2 (4 thr)"
    ref = _config(doc, LIN, "reference (1 thr)")
    assert ref["loss_check"] == "ref" and ref["speedup_vs_fastest_cpu"] == pytest.approx(4e5 / 5.22e6)
    w = doc["workloads"][0]
    assert w["cpu_baseline"] == "cpu-ddp ×2 (4 thr)" and w["reference"] == "reference (1 thr)"
    assert w["loss_curves"]["flat"] is False and len(w["loss_curves"]["coinciding"]) == 1


def test_disturbed_flags(tmp_path):
    busy = {"disturbed": "true", "others_cpu_share": "0.2", "steal_share": "0.07"}
    run = fx.write_run(tmp_path / "busy", "cpubox",
                       settings={(LIN, ("cpu-omp", 1, "cpu", 8)): busy})
    doc = _summary(run)
    omp8 = _config(doc, LIN, "cpu-omp (8 thr)")
    assert omp8["disturbed"] is True and omp8["disturbed_repetitions"] == 5
    assert omp8["others_cpu_share_max"] == pytest.approx(0.2)
    assert omp8["steal_share_max"] == pytest.approx(0.07)
    # The other configurations' rows have empty disturbance cells: not judged.
    assert omp8["judged_repetitions"] == 5
    assert _config(doc, LIN, "cpu-omp (4 thr)")["judged_repetitions"] == 0
    assert doc["disturbed"] == {"configurations": 1, "of_configurations": 7,
                                "repetitions": 5, "of_repetitions": 35, "judged_repetitions": 5,
                                "labels": [f"{LIN}: cpu-omp (8 thr)"]}


def test_non_finite_numbers_are_null_not_nan():
    """A section's NaN or inf (a median of nothing) is null: strict JSON has no NaN. (An ok
    row's NaN loss, which this test rendered once, is refused as input: test_bad_input.py.)"""
    doc = summary_json._strict({"a": math.nan, "b": [math.inf, 1.5, (-math.inf, 2)], 3: {"c": math.nan}})
    assert doc == {"a": None, "b": [None, 1.5, [None, 2]], "3": {"c": None}}
    assert summary_json.text_of(doc).count("null") == 4


def test_merged_report_gets_its_own_summary_name(cpu_run, gpu_run, tmp_path):
    out = tmp_path / "merged.html"
    assert render.main([cpu_run, gpu_run, "-o", str(out)]) == 0
    assert os.path.exists(tmp_path / "merged.summary.json")
    assert not os.path.exists(tmp_path / "summary.json")
    assert summary_json.path_beside("/x/report.html") == "/x/summary.json"
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_a_section_plugs_in_with_one_line(cpu_run, monkeypatch):
    monkeypatch.setitem(summary_json.SECTIONS, "extra", lambda s: {"workloads": len(s.workloads)})
    assert _summary(cpu_run)["extra"] == {"workloads": 2}


def test_efficiency_and_microbenchmark_sections(tmp_path):
    """summary.json carries the efficiency figures (reports/efficiency.py) and the
    micro-benchmark entries of the run folder, as numbers with units in the keys."""
    ceil = {"host": "cpubox", "units": {}, "gpus": [], "gpu_reason": "no CUDA device",
            "cpu": {"fma_gflops_1core": 100.0, "fma_gflops_all": 700.0, "triad_gbs_1core": 10.0,
                    "triad_gbs": 40.0, "threads": 8, "isa": "avx512f", "duration_s": 0.8}}
    folder = fx.write_run(tmp_path / "cpu", "cpubox", env_update={"ceilings": ceil})
    with open(os.path.join(folder, "microbench-cpu.json"), "w") as f:
        json.dump({"context": {"executable": "tb_microbench_cpu"},
                   "benchmarks": [{"name": "BM_gemm/256", "run_type": "iteration", "iterations": 10,
                                   "real_time": 2.5, "cpu_time": 2.4, "time_unit": "ms",
                                   "FLOP/s": 1.25e10}]}, f)
    doc = _summary(folder)
    rows = [c for c in doc["efficiency"]["configurations"]
            if c["workload"] == LIN and c["label"] == "cpu-omp (8 thr)"]
    assert len(rows) == 1
    r = rows[0]
    # linear 64→1 at 5e6 samples/s (fixture): 256 FLOP per sample; bytes = 260 + 12·65/(1e5/98)
    nbytes = 4 * 64 + 4 + 12 * 65 / (100_000 / 98)
    assert r["flops_per_sample"] == 256
    assert r["bytes_per_sample"] == pytest.approx(nbytes)
    assert r["achieved_gflops"] == pytest.approx(256 * 5e6 / 1e9)
    assert r["percent_of_roofline"] == pytest.approx(100 * (256 * 5e6 / 1e9) / min(700.0, 256 / nbytes * 40.0))
    assert doc["efficiency"]["ceilings"]
    mb = doc["microbenchmarks"]
    assert [m["file"] for m in mb] == ["microbench-cpu.json"]
    assert mb[0]["benchmarks"] == [{"name": "BM_gemm/256", "real_time": 2.5, "cpu_time": 2.4,
                                    "time_unit": "ms", "iterations": 10, "FLOP/s": 1.25e10}]


def _readme_summary_rows():
    """{section key: its row's text} of README.md's summary.json table."""
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md"), encoding="utf-8") as f:
        text = f.read()
    table = text[text.index("### summary.json"):text.index("### Comparing two runs")]
    rows = {}
    for head, rest in re.findall(r"^\| ((?:`\w+`(?:, )?)+) \| (.*) \|$", table, re.M):
        for key in re.findall(r"`(\w+)`", head):
            rows[key] = rest
    return rows


def test_readme_table_names_every_section_and_key(cpu_run, gpu_run):
    """README's summary.json table is what scripts read the file by: every section, and every
    key of its objects, is named there (dp_vs_ddp, time_to_target, crossovers and the failed
    counts were missing from it)."""
    rows = _readme_summary_rows()
    docs = [_summary(cpu_run), _summary(gpu_run)]
    assert set(rows) == set().union(*(d.keys() for d in docs))

    def named(section, objs):
        for obj in objs:
            for key in obj:
                assert f"`{key}`" in rows[section], f"summary.json {section}: key {key} not in README"

    for d in docs:
        named("headline", [d["headline"]])
        named("headline", d["headline"]["workloads"])
        named("workloads", d["workloads"])
        named("workloads", [c for w in d["workloads"] for c in w["configurations"]])
        named("workloads", [c for w in d["workloads"] for c in w["failed_configurations"]])
        named("failed", [d["failed"]] + d["failed"]["by_reason"])
        named("failed", [c for r in d["failed"]["by_reason"] for c in r["configurations"]])
        named("skipped", [c for r in d["skipped"]["by_reason"] for c in r["configurations"]])
        named("disturbed", [d["disturbed"]])
        named("efficiency", [d["efficiency"]] + d["efficiency"]["configurations"])
        named("dp_vs_ddp", d["dp_vs_ddp"] + [s for c in d["dp_vs_ddp"] for s in c["series"]])
        named("time_to_target", d["time_to_target"])
        named("crossovers", d["crossovers"])
    assert any(d["dp_vs_ddp"] for d in docs) and any(d["failed"]["by_reason"] for d in docs)
