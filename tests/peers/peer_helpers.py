"""Fixtures and helpers for the PyTorch peer tests (bench/peers/): where the built
trainbench is, and how to run it and the peer script. (Not a conftest.py: the
report tests import their conftest by name, and two modules called conftest on
one pytest run would shadow each other; test modules import what they use.)

The tests need the trainbench executable: $TB_TRAINBENCH, else build/trainbench
under the repository root; they skip (with the reason) when it is absent, and the
ones that train with PyTorch skip when `import torch` fails.
Run as: /usr/bin/python3 -m pytest -q tests/peers
"""

import csv
import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PEERS = os.path.join(REPO, "bench", "peers")
PEER_SCRIPT = os.path.join(PEERS, "pytorch_train.py")


@pytest.fixture(scope="session")
def trainbench():
    path = os.environ.get("TB_TRAINBENCH") or os.path.join(REPO, "build", "trainbench")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.skip(f"trainbench not built: {path} (build first, or set TB_TRAINBENCH)")
    return path


@pytest.fixture(scope="session")
def torch():
    try:
        import torch as t  # noqa: PLC0415
    except Exception as e:  # noqa: BLE001 (any import failure means: no peer here)
        pytest.skip(f"python3-torch not importable ({type(e).__name__}: {e})")
    return t


def run(cmd, expect=0):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == expect, f"{' '.join(map(str, cmd))} exited {r.returncode}:\n{r.stdout}"
    return r.stdout


def peer(*args, expect=0, python=sys.executable):
    return run([python, PEER_SCRIPT, *map(str, args)], expect)


def rows(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))
