"""The peers' peak_host_mem_bytes (bench/peers/peak_rss.py) is what trainbench's is (README
results.csv, peak_host_mem_bytes): the process's VmHWM, reset as each configuration starts,
so neither what the process held before the configuration nor an earlier configuration's
peak counts; getrusage's peak so far where there is no /proc.

The end-to-end tests run the peer in a process that first makes 1 GiB resident and frees it:
getrusage's ru_maxrss, which the peers wrote before, keeps that gigabyte in every row.
"""

import resource
import sys
from types import SimpleNamespace

import pytest

from peer_helpers import PEERS, PEER_SCRIPT, rows, run, torch, trainbench  # noqa: F401, F811 (fixtures by name)

sys.path.insert(0, PEERS)
import peak_rss  # noqa: E402
import run_peers  # noqa: E402
from test_torch_ddp import gloo  # noqa: E402, F401 (fixture used by name)

MIB = 1 << 20
BALLAST = 1024 * MIB
# The peer's own peak: a tiny workload with torch imported, ~250 MiB.
FLAGS = "--model mlp --layers 12,32,5 --samples 257 --batch 50 --epochs 2 --lr 0.2 --seed 3".split()

# Run by path (torchrun runs it once per rank): the ballast, then the peer as pytorch_train.py
# is run. Under the __main__ guard, so the spawned torch-hogwild workers that import it again
# (as __mp_main__) do neither.
WRAPPER = """import sys
if __name__ == "__main__":
    ballast = b"\\x01" * {ballast}  # every page written: resident
    del ballast                     # unmapped again: only the peak remembers it
    sys.path.insert(0, {peers!r})
    import pytorch_train
    sys.exit(pytorch_train.main([{script!r}] + sys.argv[1:]))
"""


@pytest.fixture
def resettable():
    if not peak_rss.reset_peak_rss():
        pytest.skip("this kernel refuses /proc/self/clear_refs: the peak cannot be reset here")


def test_a_reset_forgets_the_peak_before_it(resettable):
    ballast = b"\x01" * (256 * MIB)
    with_ballast = peak_rss.peak_rss_bytes()
    del ballast
    assert with_ballast >= 256 * MIB
    assert peak_rss.peak_rss_bytes() == pytest.approx(with_ballast, rel=0.01)  # freed, still the peak
    assert peak_rss.reset_peak_rss()
    assert peak_rss.peak_rss_bytes() < with_ballast - 200 * MIB


def test_the_peak_is_vmhwm_in_bytes(resettable):
    with open("/proc/self/status", encoding="ascii") as f:
        kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    assert peak_rss.peak_rss_bytes() == pytest.approx(kib * 1024, rel=0.01)


@pytest.mark.parametrize("platform, unit", [("linux", 1024), ("darwin", 1)])
def test_without_proc_the_peak_is_getrusages_so_far(monkeypatch, platform, unit):
    """Where /proc cannot be opened (macOS; a sandbox) reset says so and the peak is the
    process's so far, in bytes: Linux's ru_maxrss counts KiB, macOS's bytes."""
    def no_proc(path, *args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", path)
    monkeypatch.setattr(peak_rss, "open", no_proc, raising=False)
    monkeypatch.setattr(peak_rss.resource, "getrusage",
                        lambda who: SimpleNamespace(ru_maxrss=12345) if who == resource.RUSAGE_SELF else None)
    monkeypatch.setattr(peak_rss.sys, "platform", platform)
    assert peak_rss.reset_peak_rss() is False
    assert peak_rss.peak_rss_bytes() == 12345 * unit


def _peer_after_ballast(tmp_path, trainbench, *args, launcher=()):
    """Rows of the peer run (by `launcher`, default this python) on an export of FLAGS,
    after the process held BALLAST."""
    run([trainbench, "export", *FLAGS, "--out", tmp_path / "export"])
    wrapper = tmp_path / "peer_after_ballast.py"
    wrapper.write_text(WRAPPER.format(ballast=BALLAST, peers=PEERS, script=PEER_SCRIPT), encoding="utf-8")
    out = tmp_path / "r.csv"
    run([*(launcher or [sys.executable]), wrapper, tmp_path / "export", "--results", out,
         "--warmup", "0", "--reps", "2", *args])
    return rows(out)


def _assert_own_peaks(all_rows, backend, configurations):
    """Every row of backend ok, its peak below the ballast held before it, and above nothing."""
    got = [r for r in all_rows if r["backend"] == backend]
    assert len(got) == 2 * configurations and all(r["status"] == "ok" for r in got), got
    for r in got:
        peak = int(r["peak_host_mem_bytes"])
        assert 16 * MIB < peak < BALLAST, (backend, r["threads"], r["world_size"], peak)


def test_torch_cpu_rows_peak_from_their_configurations_start(tmp_path, trainbench, torch, resettable):
    all_rows = _peer_after_ballast(tmp_path, trainbench, "--devices", "cpu", "--threads", "1,2")
    _assert_own_peaks(all_rows, "torch-cpu", 2)


def test_torch_hogwild_rows_peak_from_their_configurations_start(tmp_path, trainbench, torch, resettable):
    all_rows = _peer_after_ballast(tmp_path, trainbench, "--devices", "hogwild", "--workers", "1,2",
                                   "--threads", "1")
    _assert_own_peaks(all_rows, "torch-hogwild", 2)


def test_torch_ddp_rows_peak_from_their_configurations_start(tmp_path, trainbench, torch, gloo, resettable):
    all_rows = _peer_after_ballast(tmp_path, trainbench, "--devices", "ddp", "--ddp-backend", "gloo",
                                   "--threads", "1", launcher=run_peers.launcher(sys.executable, 2))
    _assert_own_peaks(all_rows, "torch-ddp", 1)  # rank 0's rows
