"""compare.py: a real slowdown fails (exit 1); a small or noisy change passes (exit 0);
a run that proves nothing fails with its own status (compare.EXIT_CODES): a
configuration FAILED in NEW (3), one of BASE missing or skipped in NEW (4), nothing to
compare (5), BASE and NEW one run (6). Mixed run ids (7): test_run_ids.py."""

import csv
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import fixture_data as fx
import compare
from conftest import REPO, REPORTS

DDP4 = ("cuda-ddp", 4, "0,1,2,3", 16)
KEY = (fx.LINEAR, DDP4)
NEW_RUN = "20261123-020000-gpubox"     # the second run of the same machine


def _run(capsys, base, new, *extra):
    code = compare.main([base, new, *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def _line(out, backend, ws):
    return next(l for l in out.splitlines() if f"  {backend} " in l and f"  {ws}  " in l)


def _new(tmp_path, name="new", **kw):
    return fx.write_run(tmp_path / name, "gpubox", run=NEW_RUN, **kw)


def test_an_unchanged_second_run_passes(gpu_run, tmp_path, capsys):
    code, out, err = _run(capsys, gpu_run, _new(tmp_path))
    assert code == compare.EXIT_OK == 0
    assert "REGRESSION" not in out and err == ""
    assert "No regression beyond the threshold and the noise" in out


def test_injected_20_percent_slowdown_fails(gpu_run, tmp_path, capsys):
    new = _new(tmp_path, "slow", speed={KEY: 0.8})
    code, out, err = _run(capsys, gpu_run, new, "--threshold", "5%")
    assert code == compare.EXIT_REGRESSION == 1
    line = _line(out, "cuda-ddp", 4)
    assert "-20.0%" in line and "REGRESSION" in line and "disjoint" in line
    assert "p (new slower)" in out and "0.004" in line      # exact 5 vs 5: 1/252 = 0.004
    assert out.count("REGRESSION") == 1
    assert "FAIL (exit 1): 1 regression(s)" in out
    assert err.strip() == ("compare.py: error: 1 regression(s) beyond the threshold and beyond "
                           "noise: linear-64x1-100k/cuda-ddp/4/0,1,2,3/16")


def test_two_percent_change_within_noise_passes(gpu_run, tmp_path, capsys):
    # ±3% repetition spread around a 2% slower median: ranges overlap, below threshold.
    jit = {KEY: [0.0, 0.03, -0.03, 0.015, -0.015]}
    base = fx.write_run(tmp_path / "base", "gpubox", jitter=jit)
    new = _new(tmp_path, jitter=jit, speed={KEY: 0.98})
    code, out, _ = _run(capsys, base, new)
    assert code == 0
    line = _line(out, "cuda-ddp", 4)
    assert "-2.0%" in line and "overlap" in line and line.rstrip().endswith("ok")


def test_slowdown_above_threshold_but_within_noise_passes(gpu_run, tmp_path, capsys):
    # 8% slower median, but the repetitions spread ±25%: not beyond noise.
    jit = {KEY: [0.0, 0.25, -0.25, 0.12, -0.12]}
    base = fx.write_run(tmp_path / "base", "gpubox", jitter=jit)
    new = _new(tmp_path, jitter=jit, speed={KEY: 0.92})
    code, out, _ = _run(capsys, base, new, "--threshold", "5")
    assert code == 0
    assert "slower, within noise" in _line(out, "cuda-ddp", 4)


def test_single_repetition_uses_range_rule(tmp_path, capsys):
    base = fx.write_run(tmp_path / "base", "gpubox", reps=1)
    new = _new(tmp_path, reps=1, speed={KEY: 0.8})
    code, out, err = _run(capsys, base, new)
    assert code == 1
    assert "fewer than 3 repetitions" in err


def test_faster_is_not_a_failure(gpu_run, tmp_path, capsys):
    new = _new(tmp_path, "fast", speed={KEY: 1.3})
    code, out, _ = _run(capsys, gpu_run, new)
    assert code == 0
    assert "+30.0%" in _line(out, "cuda-ddp", 4) and "faster" in _line(out, "cuda-ddp", 4)


def test_environment_differences_are_warned(gpu_run, tmp_path, capsys):
    env = fx.env_for("gpubox")
    env["build"]["flags"] = "-O2"
    new = _new(tmp_path, env_update={"driver": "575.57.08", "build": env["build"]})
    code, out, err = _run(capsys, gpu_run, new)
    assert code == 0
    assert "environments differ: driver: 580.65.06 -> 575.57.08" in err
    assert "environments differ: build flags: -O3 -march=native -> -O2" in err
    assert "Environment differences" in out


def test_the_cuda_toolkit_and_runtime_are_compared(gpu_run, tmp_path, capsys):
    """env.json has build.cuda_toolkit and build.cuda_runtime; compare read build.cuda,
    which the harness no longer writes, so a new toolkit went unmentioned."""
    env = fx.env_for("gpubox")
    build = dict(env["build"], cuda_toolkit="12.8.93")
    code, out, err = _run(capsys, gpu_run, _new(tmp_path, env_update={"build": build}))
    assert code == 0
    assert "environments differ: CUDA toolkit: 13.0.88 -> 12.8.93" in err
    assert "CUDA runtime" not in err


def test_markdown_format(gpu_run, tmp_path, capsys):
    new = _new(tmp_path, "slow", speed={KEY: 0.8})
    code, out, _ = _run(capsys, gpu_run, new, "--format", "markdown")
    assert code == 1
    assert "| workload | backend |" in out and "**REGRESSION**" in out
    assert "- FAIL (exit 1): 1 regression(s)" in out


def _renamed(folder, old, new):
    """Rename workload `old` to `new` in a result folder's results.csv and curves.csv."""
    for name, columns in (("results.csv", fx.RESULT_COLUMNS), ("curves.csv", fx.CURVE_COLUMNS)):
        path = os.path.join(folder, name)
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        for r in rows:
            if r["workload"] == old:
                r["workload"] = new
        fx.write_csv(path, columns, rows)
    return folder


ODD_NAME = "a|b`c`*d*_e_<i>x</i>[l](u)~~s~~$m$&amp;\\\nline"


def _md_unescape(cell):
    return re.sub(r"\\(.)", r"\1", cell.replace("<br>", "\n"))


def test_markdown_cells_are_literal_whatever_the_names(gpu_run, tmp_path, capsys):
    """Only '|' was escaped: a backtick, *, _, <, [ or a line break in a workload name
    turned into code, emphasis, HTML, a link or a broken table on GitHub."""
    base = _renamed(fx.write_run(tmp_path / "base", "gpubox", run="20261121-010000-gpubox"),
                    fx.LINEAR, ODD_NAME)
    new = _renamed(_new(tmp_path, "slow", speed={KEY: 0.8}), fx.LINEAR, ODD_NAME)
    code, out, _ = _run(capsys, base, new, "--format", "markdown")
    assert code == compare.EXIT_REGRESSION
    table = [l for l in out.splitlines() if l.startswith("|")]
    odd = [l for l in table if "line" in l]
    assert len(odd) == len(fx.THROUGHPUT["gpubox"][fx.LINEAR])   # one line per row: no break
    for line in table:
        # Cells split at pipes not preceded by a backslash: always the 13 columns.
        cells = re.split(r"(?<!\\)\|", line)[1:-1]
        assert len(cells) == len(compare.COLUMNS), line
    first = re.split(r"(?<!\\)\|", odd[0])[1].strip()
    assert _md_unescape(first) == ODD_NAME
    assert first == ("a\\|b\\`c\\`\\*d\\*\\_e\\_\\<i\\>x\\</i\\>\\[l\\](u)\\~\\~s\\~\\~"
                     "\\$m\\$\\&amp;\\\\<br>line")
    ddp = next(l for l in odd if "| cuda-ddp | 4 |" in l)
    assert ddp.endswith("| **REGRESSION** |")
    assert f"- FAIL (exit 1): 1 regression(s) beyond the threshold and beyond noise: {first}/cuda-ddp/4/" in out


# --- a run that proves nothing is not a pass ---------------------------------------

def test_the_same_folder_twice_is_refused(gpu_run, capsys):
    for new in (gpu_run, gpu_run + os.sep, os.path.join(gpu_run, ".")):
        code, out, err = _run(capsys, gpu_run, new)
        assert code == compare.EXIT_SAME_RUN == 6
        assert out == ""
        assert err == (f"compare.py: error: BASE and NEW are the same folder ({new}): a run "
                       "compared with itself proves nothing; give NEW another run's folder\n")


def test_a_copy_of_the_same_run_is_refused(gpu_run, tmp_path, capsys):
    copy = str(tmp_path / "copy")
    shutil.copytree(gpu_run, copy)
    code, out, err = _run(capsys, gpu_run, copy)
    assert code == compare.EXIT_SAME_RUN
    assert err.strip() == (f"compare.py: error: BASE ({gpu_run}) and NEW ({copy}) hold the same run "
                           f"{fx.run_id('gpubox')} (a copy?): a run compared with itself proves "
                           "nothing")


def test_a_configuration_failed_in_new_fails(gpu_run, tmp_path, capsys):
    new = _new(tmp_path, status={KEY: "failed: rank 3 exited with signal 9 (Killed)"})
    code, out, err = _run(capsys, gpu_run, new)
    assert code == compare.EXIT_FAILED == 3
    assert "FAILED in new: rank 3 exited with signal 9 (Killed)" in _line(out, "cuda-ddp", 4)
    assert "FAIL (exit 3): 1 configuration(s) FAILED in NEW: linear-64x1-100k/cuda-ddp/4/0,1,2,3/16 " \
           "(first: rank 3 exited with signal 9 (Killed))" in out
    assert err.splitlines()[-1] == ("compare.py: error: 1 configuration(s) FAILED in NEW: "
                                    "linear-64x1-100k/cuda-ddp/4/0,1,2,3/16 (first: rank 3 exited "
                                    "with signal 9 (Killed))")
    # --allow-missing does not cover a failure.
    assert _run(capsys, gpu_run, new, "--allow-missing")[0] == compare.EXIT_FAILED


def test_a_failed_configuration_new_in_new_fails_too(gpu_run, tmp_path, capsys):
    """A configuration BASE never ran that FAILED in NEW is listed and fails the gate."""
    rows, curves = fx.build_rows("gpubox")
    rows.append(fx.result_row("gpubox", fx.LINEAR, ("cuda-ddp", 8, "0,1,2,3,4,5,6,7", 16), 0, 0, 0,
                              "failed: NCCL error: unhandled system error"))
    new = _write_rows(tmp_path / "new", rows, curves)
    code, out, err = _run(capsys, gpu_run, new)
    assert code == compare.EXIT_FAILED
    line = _line(out, "cuda-ddp", 8)
    assert "FAILED in new: NCCL error: unhandled system error (not in base)" in line


def test_a_failed_repetition_among_ok_ones_fails(gpu_run, tmp_path, capsys):
    rows, curves = fx.build_rows("gpubox")
    rows.append(fx.result_row("gpubox", fx.LINEAR, DDP4, 5, 0, 0, "failed: rank 2 timed out"))
    new = _write_rows(tmp_path / "new", rows, curves)
    code, out, _ = _run(capsys, gpu_run, new)
    assert code == compare.EXIT_FAILED
    assert _line(out, "cuda-ddp", 4).endswith("ok; a repetition FAILED in new: rank 2 timed out")


def _write_rows(folder, rows, curves, run=NEW_RUN):
    os.makedirs(folder)
    for r in rows + curves:
        r["run_id"] = run
    fx.write_csv(os.path.join(folder, "results.csv"), fx.RESULT_COLUMNS, rows)
    fx.write_csv(os.path.join(folder, "curves.csv"), fx.CURVE_COLUMNS, curves)
    env = fx.env_for("gpubox")
    env["run_id"] = run
    with open(os.path.join(folder, "env.json"), "w", encoding="utf-8") as f:
        json.dump(env, f)
    return str(folder)


def test_missing_in_new_fails_unless_allowed(tmp_path, capsys):
    base = fx.write_run(tmp_path / "base", "gpubox")
    new = _new(tmp_path, drop={"cuda-dp"})
    code, out, err = _run(capsys, base, new)
    assert code == compare.EXIT_MISSING == 4
    assert "missing in new" in _line(out, "cuda-dp", 2)
    assert "ran in base, missing in new" in err
    assert err.splitlines()[-1] == (
        "compare.py: error: 3 configuration(s) measured in BASE were not measured in NEW (missing "
        "or skipped): linear-64x1-100k/cuda-dp/1/0/16, linear-64x1-100k/cuda-dp/2/0,1/16, "
        "linear-64x1-100k/cuda-dp/4/0,1,2,3/16; --allow-missing accepts that")
    code, out, err = _run(capsys, base, new, "--allow-missing")
    assert code == 0
    assert "ran in base, missing in new" in err and "error" not in err


def test_skipped_in_new_counts_as_missing(gpu_run, tmp_path, capsys):
    new = _new(tmp_path, status={KEY: "skipped: NCCL not found"})
    code, out, err = _run(capsys, gpu_run, new)
    assert code == compare.EXIT_MISSING
    assert "SKIPPED in new: NCCL not found" in _line(out, "cuda-ddp", 4)
    assert _run(capsys, gpu_run, new, "--allow-missing")[0] == 0


def test_skipped_in_both_is_not_missing(gpu_run, tmp_path, capsys):
    # gpubox's cuda-ddp ×4 in the MLP workload is skipped in both runs: nothing lost.
    code, out, _ = _run(capsys, gpu_run, _new(tmp_path))
    assert code == 0 and "SKIPPED" not in out


ALL_SKIPPED = {(w, k): "skipped: no CUDA device" for w, t in fx.THROUGHPUT["gpubox"].items()
               for k in t}


def test_a_new_run_of_only_skipped_rows_fails(gpu_run, tmp_path, capsys):
    new = _new(tmp_path, status=ALL_SKIPPED)
    code, out, err = _run(capsys, gpu_run, new)
    assert code == compare.EXIT_NOTHING == 5
    assert err.splitlines()[-1] == (
        f"compare.py: error: nothing to compare: NEW ({new}) has no measured configuration: all "
        "14 row(s) skipped (no CUDA device; 1 other reason(s))")
    # Nothing compared: not passed by --allow-missing either.
    assert _run(capsys, gpu_run, new, "--allow-missing")[0] == compare.EXIT_NOTHING


def test_a_base_of_only_skipped_rows_fails(gpu_run, tmp_path, capsys):
    base = fx.write_run(tmp_path / "base", "gpubox", status=ALL_SKIPPED)
    code, _, err = _run(capsys, base, _new(tmp_path))
    assert code == compare.EXIT_NOTHING
    assert f"nothing to compare: BASE ({base}) has no measured configuration" in err


def test_runs_sharing_no_configuration_fail(tmp_path, capsys):
    base = fx.write_run(tmp_path / "gpu", "gpubox", drop={"reference", "cpu-omp"})
    new = fx.write_run(tmp_path / "cpu", "cpubox", drop={"reference"}, not_run=False)
    code, out, err = _run(capsys, base, new, "--allow-missing")
    assert code == compare.EXIT_NOTHING
    assert err.splitlines()[-1] == (
        f"compare.py: error: nothing to compare: BASE ({base}) and NEW ({new}) share no "
        "configuration (workload, backend, world size, devices, threads and knobs must all match)")


def test_every_problem_is_printed_and_the_first_by_precedence_is_returned(gpu_run, tmp_path,
                                                                          capsys):
    new = _new(tmp_path, speed={KEY: 0.8}, drop={"cuda-dp"},
               status={(fx.MLP, ("cuda", 1, "0", 16)): "failed: CUDA error: out of memory"})
    code, out, err = _run(capsys, gpu_run, new)
    assert code == compare.EXIT_FAILED
    fails = [l for l in out.splitlines() if l.startswith("FAIL (exit")]
    assert [l.split(")")[0] for l in fails] == ["FAIL (exit 3", "FAIL (exit 4", "FAIL (exit 1"]
    assert len([l for l in err.splitlines() if l.startswith("compare.py: error:")]) == 3


# --- the codes are documented where users look --------------------------------------

def test_help_lists_every_exit_status(capsys):
    with pytest.raises(SystemExit) as e:
        compare.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for code in range(8):
        assert re.search(rf"^  {code}  \S", out, re.M), code
    assert "--allow-missing" in out and "--allow-mixed-runs" in out
    assert sorted(compare.PRECEDENCE + [0]) == list(range(8))


def test_readme_table_lists_the_same_exit_statuses():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    section = readme[readme.index("### Comparing two runs"):readme.index("### Derived figures")]
    codes = [int(c) for c in re.findall(r"^\| (\d) \|", section, re.M)]
    assert codes == list(range(8))


def test_exit_status_reaches_a_real_process(gpu_run, tmp_path):
    new = _new(tmp_path, drop={"cuda-dp"})
    p = subprocess.run([sys.executable, os.path.join(REPORTS, "compare.py"), gpu_run, new],
                       capture_output=True, text=True)
    assert p.returncode == compare.EXIT_MISSING
    assert "Traceback" not in p.stderr


# --- make compare passes BASE/NEW through and fails on every non-zero status ----------

@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_compare_fails_on_every_gate_status(gpu_run, tmp_path):
    def make(**kw):
        args = ["make", "-s", "--no-print-directory", "-C", REPO, "compare",
                f"PYTHON={sys.executable}"] + [f"{k}={v}" for k, v in kw.items()]
        return subprocess.run(args, capture_output=True, text=True)

    ok = make(BASE=gpu_run, NEW=_new(tmp_path, "same"))
    assert ok.returncode == 0, ok.stderr
    for name, kw, code in [("missing", dict(drop={"cuda-dp"}), compare.EXIT_MISSING),
                           ("skipped", dict(status=ALL_SKIPPED), compare.EXIT_NOTHING),
                           ("slow", dict(speed={KEY: 0.8}), compare.EXIT_REGRESSION)]:
        p = make(BASE=gpu_run, NEW=_new(tmp_path, name, **kw))
        assert p.returncode != 0, name
        # GNU make exits 2 for any failed recipe and names the script's status.
        assert f"compare] Error {code}" in p.stderr, p.stderr
    same = make(BASE=gpu_run, NEW=gpu_run)
    assert same.returncode != 0 and "compare] Error 6" in same.stderr
    allowed = make(BASE=gpu_run, NEW=os.path.join(tmp_path, "missing"),
                   COMPARE_ARGS="--allow-missing")
    assert allowed.returncode == 0, allowed.stderr
    two = make(BASE=gpu_run, NEW=f"{gpu_run} {gpu_run}")
    assert two.returncode != 0 and "BASE and NEW must be one folder each" in two.stderr
