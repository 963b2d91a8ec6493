"""`make report` (the Makefile's report target) in a scratch folder: several runs
merge into a report of their own (results/report-<time>.html, or OUT=), never into
an input folder; no input folder's mtime changes, so the newest run, which
`make compare` and `make record` pick by default, stays the newest."""

import glob
import os
import shutil
import subprocess
import sys

import pytest

import fixture_data
from conftest import REPO, REPORTS


def make_report(cwd, *args):
    return subprocess.run(["make", "-s", "-f", os.path.join(REPO, "Makefile"), "-C", str(cwd), "report",
                           f"PYTHON={sys.executable}", *args], capture_output=True, text=True)


@pytest.fixture
def two_runs(tmp_path):
    if not shutil.which("make"):
        pytest.skip("make not installed")
    os.symlink(REPORTS, tmp_path / "reports")  # the Makefile calls reports/render.py
    a = fixture_data.write_run(tmp_path / "results" / "a", "cpubox")
    b = fixture_data.write_run(tmp_path / "results" / "b", "gpubox")
    os.utime(a, (1_700_000_000, 1_700_000_000))  # a older than b
    os.utime(b, (1_700_000_100, 1_700_000_100))
    return tmp_path, a, b


def mtimes(*dirs):
    return [os.stat(d).st_mtime_ns for d in dirs]


def newest(cwd):
    return max(glob.glob(os.path.join(cwd, "results", "*/")), key=os.path.getmtime)


def test_several_runs_merge_into_a_report_of_their_own(two_runs):
    cwd, a, b = two_runs
    before = mtimes(a, b)
    r = make_report(cwd, "RUN=results/a results/b")
    assert r.returncode == 0, r.stdout + r.stderr
    merged = glob.glob(os.path.join(cwd, "results", "report-*.html"))
    assert len(merged) == 1 and "cpubox" in open(merged[0], encoding="utf-8").read()
    assert not os.path.exists(os.path.join(a, "report.html"))
    assert not os.path.exists(os.path.join(b, "report.html"))
    assert mtimes(a, b) == before
    assert os.path.samefile(newest(cwd), b)


def test_out_names_the_merged_report(two_runs):
    cwd, a, b = two_runs
    r = make_report(cwd, "RUN=results/a results/b", f"OUT={cwd}/merged.html")
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.isfile(cwd / "merged.html")
    assert not glob.glob(os.path.join(cwd, "results", "report-*.html"))


def test_one_run_is_rendered_into_its_folder_which_keeps_its_mtime(two_runs):
    cwd, a, b = two_runs
    before = mtimes(a, b)
    r = make_report(cwd, "RUN=results/a/")
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.isfile(os.path.join(a, "report.html"))
    assert mtimes(a, b) == before
    assert os.path.samefile(newest(cwd), b)


def test_a_failed_render_still_leaves_the_mtimes_and_fails(two_runs):
    cwd, a, b = two_runs
    os.remove(os.path.join(b, "results.csv"))
    before = mtimes(a, b)
    r = make_report(cwd, "RUN=results/a results/b")
    assert r.returncode != 0
    assert mtimes(a, b) == before
    assert not glob.glob(os.path.join(cwd, "results", "report-*.html"))
