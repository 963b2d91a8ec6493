"""reports/record.py: a finished run copied to docs/results/<device>-<date>/ with a
README naming the machine; bad input (not a result folder, dirty tree, an existing
record) exits 2 and writes nothing."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fixture_data
from conftest import REPORTS

RECORD = os.path.join(REPORTS, "record.py")


def record(*args):
    return subprocess.run([sys.executable, RECORD, *map(str, args)], capture_output=True, text=True)


def test_a_gpu_run_is_recorded_under_its_gpu_and_date(gpu_run, tmp_path):
    dest = tmp_path / "docs" / "results"
    r = record(gpu_run, "--dest", dest, "--note", "idle machine")
    assert r.returncode == 0, r.stderr
    out = dest / "nvidia-h100-80gb-hbm3-x4-2026-11-22"
    run = Path(gpu_run)
    expect = {"README.md"} | {f for f in ("results.csv", "curves.csv", "env.json", "log.txt", "report.html")
                              if (run / f).is_file()}
    assert set(os.listdir(out)) == expect
    assert (out / "results.csv").read_bytes() == (run / "results.csv").read_bytes()
    text = (out / "README.md").read_text()
    assert "GPU 3: NVIDIA H100 80GB HBM3" in text and "Driver: 580.65.06" in text
    assert "32 logical cores" in text and "0123456789abcdef0123" in text and "idle machine" in text
    # The same run again: refused, the first record untouched.
    again = record(gpu_run, "--dest", dest)
    assert again.returncode == 2 and "already exists and holds this run" in again.stderr
    assert (out / "README.md").read_text() == text
    assert os.listdir(dest) == [out.name]


def test_a_second_run_of_the_same_device_and_date_gets_its_own_record(tmp_path):
    dest = tmp_path / "records"
    first = fixture_data.write_run(tmp_path / "a", "gpubox")
    second = fixture_data.write_run(tmp_path / "b", "gpubox", env_update={"run_id": "20261122-090000-gpubox"})
    third = fixture_data.write_run(tmp_path / "c", "gpubox", env_update={"run_id": "20261122-120000-gpubox"})
    for run in (first, second, third):
        r = record(run, "--dest", dest)
        assert r.returncode == 0, r.stderr
    base = "nvidia-h100-80gb-hbm3-x4-2026-11-22"
    assert sorted(os.listdir(dest)) == [base, base + "-2", base + "-3"]
    assert "20261122-090000-gpubox" in (dest / (base + "-2") / "README.md").read_text()
    again = record(second, "--dest", dest)  # recorded already, as -2
    assert again.returncode == 2 and f"{base}-2: already exists" in again.stderr


def test_help_says_what_it_does_in_whole_sentences():
    r = subprocess.run([sys.executable, RECORD, "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    assert "docs/results/<device>-<date>/ with a README naming the machine, so measured numbers\n" \
           "are committed deliberately (results/ itself is never committed)." in r.stdout
    assert "Exit status: 0 recorded; 2 bad input" in r.stdout


def test_a_cpu_run_is_named_after_its_cpu(cpu_run, tmp_path):
    r = record(cpu_run, "--dest", tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "amd-epyc-7b13-cpu-2026-11-22" / "README.md").is_file()


def test_bad_input_exits_2_and_writes_nothing(tmp_path):
    dest = tmp_path / "dest"
    r = record(tmp_path / "nowhere", "--dest", dest)
    assert r.returncode == 2 and "no results.csv" in r.stderr and not dest.exists()
    dirty = fixture_data.write_run(tmp_path / "dirty", "gpubox", env_update={"git": {"commit": "abc", "dirty": True}})
    r = record(dirty, "--dest", dest)
    assert r.returncode == 2 and "dirty tree" in r.stderr and not dest.exists()


def test_the_readme_names_the_cuda_toolkit_and_runtime(gpu_run, tmp_path):
    """env.json has build.cuda_toolkit and build.cuda_runtime (harness/env_capture.cpp);
    record.py read build.cuda, which the harness no longer writes: 'CUDA —' on a GPU box."""
    r = record(gpu_run, "--dest", tmp_path)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "nvidia-h100-80gb-hbm3-x4-2026-11-22" / "README.md").read_text()
    assert "- Driver: 580.65.06; CUDA toolkit 13.0.88, runtime 13.0; NCCL 2.28.3\n" in text


def test_an_older_env_json_with_build_cuda_still_names_the_runtime(tmp_path):
    env = fixture_data.env_for("gpubox")
    build = {k: v for k, v in env["build"].items() if not k.startswith("cuda_")}
    run = fixture_data.write_run(tmp_path / "old", "gpubox", env_update={"build": dict(build, cuda="12.4")})
    r = record(run, "--dest", tmp_path / "dest")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "dest" / "nvidia-h100-80gb-hbm3-x4-2026-11-22" / "README.md").read_text()
    assert "CUDA runtime 12.4;" in text


@pytest.mark.parametrize("timestamp", ["../../escaped", "/tmp/abs/olute", "2026-11-22/../../x",
                                       "..", "a/b"])
def test_a_timestamp_never_puts_the_record_outside_dest(tmp_path, timestamp):
    """The folder name took the timestamp's first 10 characters: '../../escaped' wrote the
    record two levels above --dest."""
    run = fixture_data.write_run(tmp_path / "run", "gpubox", env_update={"timestamp": timestamp})
    dest = tmp_path / "a" / "b" / "dest"
    r = record(run, "--dest", dest)
    assert r.returncode == 0, r.stderr
    assert os.listdir(dest) == ["nvidia-h100-80gb-hbm3-x4-undated"]
    assert sorted(os.listdir(tmp_path)) == ["a", "run"] and os.listdir(tmp_path / "a") == ["b"]
    assert r.stdout == f"recorded {run} in {dest}/nvidia-h100-80gb-hbm3-x4-undated\n"


BAD = {
    "results.csv that does not parse": (lambda d: (d / "results.csv").write_text("schema_version,run_id\n2,x\n"),
                                        "results.csv: header lacks column"),
    "empty results.csv": (lambda d: (d / "results.csv").write_text(""), "results.csv: empty file"),
    "results.csv a folder": (lambda d: (os.remove(d / "results.csv"), os.mkdir(d / "results.csv")),
                             "no results.csv"),
    "env.json a list": (lambda d: (d / "env.json").write_text("[1, 2]"),
                        "env.json: expected a JSON object at the top level"),
    "env.json gpus of strings": (lambda d: _env(d, gpus=["H100"]),
                                 'env.json: gpus[0] is a string ("H100"), not an object'),
    "env.json host a string": (lambda d: _env(d, host="box"),
                               'env.json: host is a string ("box"), not an object'),
    "env.json timestamp a number": (lambda d: _env(d, timestamp=20261122),
                                    "env.json: timestamp is an integer (20261122), not a string"),
    "env.json dirty a list": (lambda d: _env(d, git={"commit": "abc", "dirty": [1]}),
                              "env.json: git.dirty is a list ([1]), not true or false"),
}


def _env(folder, **fields):
    env = json.loads((folder / "env.json").read_text())
    env.update(fields)
    (folder / "env.json").write_text(json.dumps(env))


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_folder_the_reports_cannot_read_is_one_line_and_no_record(tmp_path, case):
    """results.csv was not read at all (a broken one was recorded), and an odd env.json
    ended in a traceback (AttributeError, TypeError)."""
    mutate, message = BAD[case]
    run = Path(fixture_data.write_run(tmp_path / "run", "gpubox"))
    mutate(run)
    dest = tmp_path / "dest"
    r = record(run, "--dest", dest)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("record.py: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert not dest.exists()


# --- a record in the way whose env.json cannot be read: the line names the file and why.
# It said "already exists and holds this run" for all of these, which sent the reader
# looking for a duplicate run instead of at the broken file.

BASE = "nvidia-h100-80gb-hbm3-x4-2026-11-22"
UNREADABLE = {
    "not JSON": (lambda env: env.write_text('{"run_id": '),
                 "env.json: not valid JSON (Expecting value at line 1, column 12)"),
    "not an object": (lambda env: env.write_text("[1, 2]"), "env.json: not a JSON object"),
    "no run_id": (lambda env: env.write_text('{"schema_version": 2}'),
                  "env.json: has no run_id (a non-empty string)"),
    "missing": (lambda env: env.unlink(), "env.json: missing"),
    "not UTF-8": (lambda env: env.write_bytes(b'{"run_id": "caf\xe9"}'),
                  "env.json: line 1, byte 16: not UTF-8 text"),
}


def _recorded_then_second(tmp_path):
    """(dest, the first run's record, a second run of the same device and date)."""
    dest = tmp_path / "dest"
    assert record(fixture_data.write_run(tmp_path / "a", "gpubox"), "--dest", dest).returncode == 0
    second = fixture_data.write_run(tmp_path / "b", "gpubox",
                                    env_update={"run_id": "20261122-090000-gpubox"})
    return dest, dest / BASE, second


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_a_record_whose_env_json_cannot_be_read_is_named_with_why(tmp_path, case):
    mutate, why = UNREADABLE[case]
    dest, earlier, second = _recorded_then_second(tmp_path)
    mutate(earlier / "env.json")
    r = record(second, "--dest", dest)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"record.py: error: {earlier}/{why}"), r.stderr
    assert r.stderr.endswith(f": cannot tell which run {earlier} holds (fix or move that folder, "
                             "then record again)\n") and r.stderr.count("\n") == 1
    assert "holds this run" not in r.stderr
    assert os.listdir(dest) == [BASE]


def test_a_record_whose_env_json_is_unreadable_names_the_permission(tmp_path, capsys, monkeypatch):
    """open() refused (root reads a chmod 0 file, so simulated, as in test_bad_input.py)."""
    import load
    import record as record_py
    dest, earlier, second = _recorded_then_second(tmp_path)
    blocked = str(earlier / "env.json")
    real_open = open

    def refuse(path, *a, **kw):
        if str(path) == blocked:
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *a, **kw)
    monkeypatch.setattr(load, "open", refuse, raising=False)
    assert record_py.main([second, "--dest", str(dest)]) == 2
    assert capsys.readouterr().err == (f"record.py: error: {blocked}: cannot read (Permission denied): "
                                       f"cannot tell which run {earlier} holds (fix or move that "
                                       "folder, then record again)\n")
    assert os.listdir(dest) == [BASE]
