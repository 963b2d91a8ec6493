"""`make help` lists every target. `make bench` and `make perf` stop at a suite that cannot run (bad input, exit 2): the
suite's own one-line error and status, no result folder, and none of the later steps
(the PyTorch peers, the micro-benchmarks, the report, perf's sgemm rate) each adding a
line about a folder that is not there. The build steps are taken as done (-o): the test
runs against the build that `make test` made (TB_TRAINBENCH names its trainbench).
"""

import os
import subprocess

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
