"""Bad input: one clear line naming the file and the problem, exit 2, no report written."""

import csv
import io
import json
import os
import subprocess
import sys

import pytest

import compare
import fixture_data as fx
import render
from conftest import REPORTS
from load import RESULT_COLUMNS


def _replace_line(path, n, fn):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    lines[n] = fn(lines[n])
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def _write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _set_field(col, value):
    """A line rewriter that sets one results.csv column (keeping the CSV quoting)."""
    idx = RESULT_COLUMNS.index(col)

    def fn(line):
        rec = next(csv.reader([line]))
        rec[idx] = value
        buf = io.StringIO()
        csv.writer(buf, lineterminator="").writerow(rec)
        return buf.getvalue()
    return fn


CASES = {
    "missing results.csv": (lambda d: os.remove(f"{d}/results.csv"), "results.csv: missing"),
    "empty results.csv": (lambda d: _write(f"{d}/results.csv", ""), "results.csv: empty file"),
    "header only": (lambda d: _write(f"{d}/results.csv", ",".join(RESULT_COLUMNS) + "\n"),
                    "results.csv: header only"),
    "wrong header": (lambda d: _replace_line(f"{d}/results.csv", 0,
                                             lambda h: h.replace("samples_per_s", "throughput")),
                     "column 24 should be 'samples_per_s', found 'throughput'"),
    "non-numeric metric": (lambda d: _replace_line(f"{d}/results.csv", 1,
                                                   _set_field("samples_per_s", "fast")),
                           "line 2, column 'samples_per_s': 'fast' is not a number"),
    "empty metric in ok row": (lambda d: _replace_line(f"{d}/results.csv", 1,
                                                       _set_field("final_loss", "")),
                               "column 'final_loss': empty in an ok row"),
    "unknown schema_version": (lambda d: _replace_line(f"{d}/results.csv", 3,
                                                       _set_field("schema_version", "2")),
                               "line 4: unknown schema_version '2'"),
    "wrong field count": (lambda d: _replace_line(f"{d}/results.csv", 2, lambda l: l + ",extra"),
                          f"line 3: expected {len(RESULT_COLUMNS)} fields, found {len(RESULT_COLUMNS) + 1}"),
    "bad status": (lambda d: _replace_line(f"{d}/results.csv", 1, _set_field("status", "done")),
                   "column 'status': 'done' is not"),
    "missing env.json": (lambda d: os.remove(f"{d}/env.json"), "env.json: missing"),
    "env.json not JSON": (lambda d: _write(f"{d}/env.json", "{\"schema_version\": 1,"),
                          "env.json: not valid JSON"),
    "env.json schema 2": (lambda d: _write(f"{d}/env.json", json.dumps(
        {"schema_version": 2, "run_id": "x"})), "env.json: unknown schema_version 2"),
    "curves.csv bad header": (lambda d: _replace_line(f"{d}/curves.csv", 0,
                                                      lambda h: h.replace("train_loss", "loss")),
                              "curves.csv: header does not match"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_render_rejects_bad_input(case, gpu_run, capsys):
    mutate, message = CASES[case]
    mutate(gpu_run)
    assert render.main([gpu_run]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("render.py: error: ") and gpu_run in err
    assert message in err
    assert not os.path.exists(os.path.join(gpu_run, "report.html"))
    assert not [f for f in os.listdir(gpu_run) if f.endswith(".tmp")]


def test_missing_folder(tmp_path, capsys):
    missing = str(tmp_path / "nope")
    assert render.main([missing]) == 2
    assert capsys.readouterr().err.strip() == f"render.py: error: {missing}: no such result folder"
    assert compare.main([missing, missing]) == 2


def test_bad_second_folder_leaves_existing_report_untouched(cpu_run, gpu_run, capsys):
    out = os.path.join(cpu_run, "report.html")
    _write(out, "previous report")
    os.remove(os.path.join(gpu_run, "env.json"))
    assert render.main([cpu_run, gpu_run]) == 2
    with open(out, encoding="utf-8") as f:
        assert f.read() == "previous report"


def test_compare_rejects_bad_new_run(gpu_run, tmp_path, capsys):
    new = fx.write_run(tmp_path / "new", "gpubox")
    _write(os.path.join(new, "results.csv"), "")
    assert compare.main([gpu_run, new]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"compare.py: error: {new}/results.csv: empty file (expected a header and at least one row)"


def test_cli_exit_status_from_a_real_process(gpu_run):
    os.remove(os.path.join(gpu_run, "env.json"))
    p = subprocess.run([sys.executable, os.path.join(REPORTS, "render.py"), gpu_run],
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr.count("\n") == 1 and "env.json: missing" in p.stderr


def test_same_run_twice_is_rejected(gpu_run, tmp_path, capsys):
    out = str(tmp_path / "r.html")
    assert render.main([gpu_run, gpu_run, "-o", out]) == 2
    assert "a run may be given only once" in capsys.readouterr().err
    assert not os.path.exists(out)
