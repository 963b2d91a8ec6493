"""pytest setup for the report tests: puts reports/ on the import path, provides folders.

Run as: /usr/bin/python3 -m pytest -q tests/reports
"""

import os
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REPORTS = os.path.join(REPO, "reports")
sys.path.insert(0, REPORTS)

import fixture_data  # noqa: E402


@pytest.fixture
def cpu_run(tmp_path):
    return fixture_data.write_run(tmp_path / "cpu", "cpubox")


@pytest.fixture
def gpu_run(tmp_path):
    return fixture_data.write_run(tmp_path / "gpu", "gpubox")
