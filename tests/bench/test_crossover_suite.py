"""bench/suites/crossover.suite, scaled down, through `trainbench suite` and the report.

The suite's three sweeps (widths, batches, rows) run with rows / 16, one timed epoch, no
warm-up and 2 repetitions (well under 60 s on 2 cores): every CPU row is ok; every cuda
row is ok where a GPU is usable and `skipped: no CUDA device (...)` where none is (this
machine's env.json says which); the report finds the three sweeps and says, for each,
either which configuration beats which from which size or that there is no crossover in
the measured range. Timings of so small a run mean nothing: which of those it says is
not checked (tests/reports/test_crossover.py checks the crossings on fixtures).

Skipped, with the reason, where trainbench is not built. Run as:
TB_TRAINBENCH=build/trainbench /usr/bin/python3 -m pytest -q tests/bench/test_crossover_suite.py
"""

import csv
import json
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRAINBENCH = os.environ.get("TB_TRAINBENCH", os.path.join(REPO, "build", "trainbench"))
SUITE = os.path.join(REPO, "bench", "suites", "crossover.suite")
sys.path.insert(0, os.path.join(REPO, "reports"))


def scaled(text):
    text = re.sub(r"--samples (\d+)", lambda m: f"--samples {int(m.group(1)) // 16}", text)
    text = re.sub(r"--epochs \d+", "--epochs 1", text)
    text = re.sub(r"--warmup \d+", "--warmup 0", text)
    return re.sub(r"--reps \d+", "--reps 2", text)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not os.path.exists(TRAINBENCH):
        pytest.skip(f"no trainbench at {TRAINBENCH} (build first, or set TB_TRAINBENCH)")
    d = tmp_path_factory.mktemp("crossover-suite")
    suite = d / "crossover.suite"
    with open(SUITE, encoding="utf-8") as f:
        suite.write_text(scaled(f.read()))
    out = d / "out"
    p = subprocess.run([TRAINBENCH, "suite", str(suite), "--out", str(out)], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, CI="1"))
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    with open(out / "results.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    with open(out / "env.json", encoding="utf-8") as f:
        env = json.load(f)
    return out, rows, env


def test_the_scaled_copy_keeps_every_entry():
    with open(SUITE, encoding="utf-8") as f:
        text = f.read()
    entries = [line for line in text.splitlines() if line.startswith("xo-")]
    assert len(entries) == 15   # 12 workloads, the reference on a line of its own in 3
    assert len(scaled(text).splitlines()) == len(text.splitlines())


def test_cpu_rows_run_and_gpu_rows_skip_with_the_reason(run):
    _, rows, env = run
    cpu = [r for r in rows if r["device_kind"] == "cpu"]
    gpu = [r for r in rows if r["device_kind"] == "gpu"]
    assert cpu and all(r["status"] == "ok" for r in cpu), [r["status"] for r in cpu if r["status"] != "ok"]
    assert {r["workload"] for r in gpu} == {r["workload"] for r in cpu}   # cuda on every entry
    if env.get("gpu_unavailable_reason"):
        assert all(r["status"].startswith("skipped: no CUDA device") for r in gpu), {r["status"] for r in gpu}
    else:
        assert all(r["status"] == "ok" for r in gpu)


def test_the_report_finds_the_three_sweeps_and_speaks_of_each(run):
    out, _, _ = run
    p = subprocess.run([sys.executable, os.path.join(REPO, "reports", "render.py"), str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    section = html.split('<section id="crossovers">', 1)[1].split("</section>", 1)[0]
    sweeps = re.split(r"<h3>", section)[1:]
    assert [s.split(" sweep", 1)[0] for s in sweeps] == ["samples", "batch", "width"]
    for s in sweeps:
        assert " beats " in s or "no crossover in the measured range" in s, s[:400]
    assert "(xo-width-16, xo-width-64, xo-width-256, xo-width-1024)" in section
