"""reports/record.py: a finished run copied to docs/results/<device>-<date>/ with a
README naming the machine; bad input (not a result folder, dirty tree, an existing
record) exits 2 and writes nothing."""

import os
import subprocess
import sys
from pathlib import Path

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
