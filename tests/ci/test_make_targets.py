"""`make help` lists every target. `make bench` and `make perf` stop at a suite that cannot run (bad input, exit 2): the
suite's own one-line error and status, no result folder, and none of the later steps
(the PyTorch peers, the micro-benchmarks, the report, perf's sgemm rate) each adding a
line about a folder that is not there. The build steps are taken as done (-o): the test
runs against the build that `make test` made (TB_TRAINBENCH names its trainbench).
"""

import os
import signal
import subprocess
import time

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRAINBENCH = os.environ.get("TB_TRAINBENCH", os.path.join(REPO, "build", "trainbench"))
# The Makefile runs ./$(BUILD)/trainbench: BUILD is relative to the repository.
BUILD = os.path.relpath(os.path.dirname(os.path.abspath(TRAINBENCH)), REPO)

pytestmark = pytest.mark.skipif(not os.access(TRAINBENCH, os.X_OK), reason=f"no trainbench at {TRAINBENCH}")

LATER_STEPS = ("run_peers.py", "render.py", "microbench", "sgemm", "report:", "load average before")


def _make(target, *variables):
    return subprocess.run(["make", "--no-print-directory", "-o", "deps", "-o", "configure", "-o", "build", target,
                           f"BUILD={BUILD}", *variables], cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("target,suite_var,out_var", [("bench", "SUITE", "RESULTS"),
                                                      ("perf", "PERF_SUITE", "PERF_RESULTS")])
def test_a_bad_suite_stops_the_make_with_its_own_error_and_writes_nothing(tmp_path, target, suite_var, out_var):
    suite = tmp_path / "bad.suite"
    suite.write_text("a: --model linear --layers 4,1 --samples 64 --batch 0\n")
    out = tmp_path / "run"
    r = _make(target, f"{suite_var}={suite}", f"{out_var}={out}")
    text = r.stdout + r.stderr
    assert r.returncode != 0, text
    assert "bad.suite:1: --batch" in text, text
    for step in LATER_STEPS:
        assert step not in text, text
    assert not out.exists(), text


def test_a_missing_suite_file_is_one_error_too(tmp_path):
    out = tmp_path / "run"
    r = _make("bench", f"SUITE={tmp_path / 'none.suite'}", f"RESULTS={out}")
    text = r.stdout + r.stderr
    assert r.returncode != 0
    assert "none.suite: cannot open suite file" in text, text
    assert "the suite ended with status 2: nothing more is run" in text, text
    for step in LATER_STEPS:
        assert step not in text, text
    assert not out.exists()


def _phony_targets():
    with open(os.path.join(REPO, "Makefile"), encoding="utf-8") as f:
        line = next(l for l in f if l.startswith(".PHONY:"))
    return set(line.split(":", 1)[1].split())


def test_make_help_lists_every_target_and_only_those():
    r = subprocess.run(["make", "--no-print-directory", "help"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    listed = {line.split()[1] for line in r.stdout.splitlines() if line.startswith("make ")}
    # `all` is `build` under its conventional name; the help line for build says so.
    assert listed == _phony_targets() - {"all"}, r.stdout
    assert "make all is the same" in r.stdout


def _suite_pid(suite):
    # The suite's own process: trainbench with the suite file among its arguments (the
    # make's shell has the path in its command line too, as one string).
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"/trainbench") and str(suite).encode() in argv:
            return int(pid)
    return None


def test_a_suite_ended_by_a_signal_stops_the_make_and_says_how_to_render_its_rows(tmp_path):
    suite = tmp_path / "slow.suite"
    suite.write_text("a: --model linear --layers 64,1 --samples 200000 --batch 64 --epochs 30 --reps 50 "
                     "--warmup 0 --backends cpu-omp --threads 1\n")
    out = tmp_path / "run"
    make = subprocess.Popen(["make", "--no-print-directory", "-o", "deps", "-o", "configure", "-o", "build", "bench",
                             f"BUILD={BUILD}", f"SUITE={suite}", f"RESULTS={out}"], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # a repetition's row is written: the suite is under way
            rows = out / "results.csv"
            if rows.exists() and len(rows.read_text().splitlines()) >= 2:
                break
            time.sleep(0.2)
        pid = _suite_pid(suite)
        assert pid is not None
        os.kill(pid, signal.SIGTERM)
        text, _ = make.communicate(timeout=120)
    finally:
        if make.poll() is None:
            make.kill()
    assert make.returncode != 0, text
    assert "the suite ended with status 143: nothing more is run" in text, text
    assert f"the rows it kept: make report RUN={out}" in text, text
    for step in LATER_STEPS:
        assert step not in text, text
