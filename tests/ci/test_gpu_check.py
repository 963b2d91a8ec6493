"""`make gpu-check` (.ci/gpu-check) on a machine without a GPU: it says why and fails
before building anything; and, in its fake-GPU mode (TB_GPU_CHECK_FAKE=1: the GPU steps
on the fake GPUs of tests/cuda_trace, the fake NVML, a stub compute-sanitizer), the bundle
it leaves (results, env.json, report or why not, logs, sanitizer output, summary) and its
exit status: any failed step fails the check, a missing matplotlib only skips the report.

The fake-mode tests need a build with the fake CUDA runtime: TB_TRAINBENCH (set by
`make test`) names its trainbench, else build/trainbench.
"""

import csv
import os
import shutil
import stat
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRAINBENCH = os.environ.get("TB_TRAINBENCH", os.path.join(REPO, "build", "trainbench"))
BUILD = os.path.dirname(os.path.abspath(TRAINBENCH))
SHIM = os.path.join(BUILD, "tests", "libtb_cuda_trace_shim.so")


def _script(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return str(path)


def _make_gpu_check(tmp_path, extra_env, nvidia_smi=None):
    env = dict(os.environ)
    env.update(extra_env)
    if nvidia_smi is not None:
        stub = tmp_path / "stub-bin"
        stub.mkdir()
        _script(stub / "nvidia-smi", nvidia_smi)
        env["PATH"] = f"{stub}:{env['PATH']}"
    return subprocess.run(["make", "--no-print-directory", "-C", REPO, "gpu-check", "TB_SKIP_DEPS=1"],
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("smi, why", [
    ("#!/bin/sh\necho 'No devices were found'\nexit 6\n", "nvidia-smi lists no GPU: No devices were found"),
    ("#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"\nexit 9\n",
     "nvidia-smi lists no GPU: NVIDIA-SMI has failed because it couldn't communicate"),
])
def test_without_a_gpu_it_says_why_and_fails_before_building(tmp_path, smi, why):
    out = tmp_path / "bundle"
    r = _make_gpu_check(tmp_path, {"TB_GPU_CHECK_OUT": str(out), "TB_GPU_CHECK_BUILD": str(tmp_path / "b"),
                                   "TB_TRAINBENCH": TRAINBENCH}, nvidia_smi=smi)
    assert r.returncode != 0, r.stdout + r.stderr
    assert f"gpu-check: no usable GPU: {why}" in r.stderr, r.stderr
    if os.access(TRAINBENCH, os.X_OK) and not shutil.which("nvidia-smi"):
        # The devices message of an existing build says why too (no CUDA device here).
        assert "trainbench devices says: gpus     none usable:" in r.stderr, r.stderr
    assert not out.exists() and not (tmp_path / "b").exists()  # nothing built, no bundle


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_without_a_driver_it_names_the_missing_nvidia_smi(tmp_path):
    r = _make_gpu_check(tmp_path, {"TB_GPU_CHECK_OUT": str(tmp_path / "bundle")})
    assert r.returncode != 0
    assert "gpu-check: no usable GPU: nvidia-smi not found (no NVIDIA driver on this machine)" in r.stderr


def _libcuda_loads():
    import ctypes
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


@pytest.mark.skipif(_libcuda_loads(), reason="this machine has CUDA's driver library")
def test_a_gpu_listed_but_no_cuda_driver_fails_before_building(tmp_path):
    # nvidia-smi lists a GPU, libcuda.so.1 cannot be loaded: the driver-API probe says so and
    # the check exits before the build, as without a GPU (no bundle, nothing built).
    out = tmp_path / "bundle"
    smi = "#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)'\n"
    r = _make_gpu_check(tmp_path, {"TB_GPU_CHECK_OUT": str(out), "TB_GPU_CHECK_BUILD": str(tmp_path / "b"),
                                   "PYTHON": sys.executable}, nvidia_smi=smi)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "gpu-check: no usable GPU: nvidia-smi lists a GPU, but CUDA's driver library cannot be loaded" \
        in r.stderr, r.stderr
    assert "Error 3" in r.stderr  # make's line: the script's status
    assert not out.exists() and not (tmp_path / "b").exists()


needs_fake = pytest.mark.skipif(not os.path.exists(SHIM), reason=f"no fake CUDA runtime built ({SHIM})")

SUITE = """defaults: --epochs 2 --warmup 1 --reps 2 --seed 1
tiny: --model mlp --layers 8,16,4 --samples 2048 --batch 64 --lr 0.05 --backends reference,cuda
"""


def _fake_check(tmp_path, sanitizer_rc, python, ctest_filter, suite_text=SUITE, build=BUILD):
    suite = tmp_path / "check.suite"
    suite.write_text(suite_text)
    # A stub compute-sanitizer: writes its --log-file as the real one does, runs the program.
    sanitizer = _script(tmp_path / "compute-sanitizer", f"""#!/bin/bash
tool=; log=
while [ $# -gt 0 ]; do
  case $1 in --tool) tool=$2; shift 2;; --log-file) log=$2; shift 2;; --error-exitcode) shift 2;; *) break;; esac
done
"$@" > /dev/null 2>&1 || exit $?
if [ {sanitizer_rc} != 0 ] && [ "$tool" = racecheck ]; then
  echo "========= Error: Race reported between Write access and Read access" > "$log"
  echo "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)" >> "$log"
  exit {sanitizer_rc}
fi
echo "========= ERROR SUMMARY: 0 errors" > "$log"
""")
    out = tmp_path / "bundle"
    env = dict(os.environ, TB_GPU_CHECK_FAKE="1", TB_GPU_CHECK_BUILD=build, TB_GPU_CHECK_OUT=str(out),
               TB_GPU_CHECK_SUITE=str(suite), TB_COMPUTE_SANITIZER=sanitizer, PYTHON=python,
               TB_GPU_CHECK_CTEST_ARGS=f"-R '{ctest_filter}'", TB_SKIP_DEPS="1")
    r = subprocess.run(["bash", os.path.join(REPO, ".ci", "gpu-check")], env=env, capture_output=True,
                       text=True, timeout=600)
    return r, out


def _summary(out):
    lines = (out / "summary.txt").read_text().splitlines()
    return {ln.split()[0]: ln for ln in lines[1:] if ln and not ln.startswith(("FAKE", "gpu", "driver"))}


def _scaled_check_suite():
    """bench/suites/gpu-check.suite scaled down for the fake GPUs' host GEMMs (the same
    helper as tests/bench: widths / 32, rows and batches / 128)."""
    sys.path.insert(0, os.path.join(REPO, "tests", "bench"))
    from test_gpu_suite_fake_gpus import scaled
    return scaled(os.path.join(REPO, "bench", "suites", "gpu-check.suite")) + "\n"


@needs_fake
def test_fake_gpu_run_leaves_the_whole_bundle(tmp_path):
    pytest.importorskip("matplotlib")
    r, out = _fake_check(tmp_path, 0, sys.executable, "CudaKernels.SgdUpdateMatchesCpu", _scaled_check_suite())
    assert r.returncode == 0, r.stdout + r.stderr
    for f in ["results.csv", "curves.csv", "env.json", "report.html", "devices.txt", "nvidia-smi.txt",
              "summary.txt", "logs/ctest_cuda.log", "logs/suite.log", "sanitizer/memcheck.txt",
              "sanitizer/racecheck.txt"]:
        assert (out / f).is_file(), f
    assert "ERROR SUMMARY: 0 errors" in (out / "sanitizer" / "memcheck.txt").read_text()
    # ctest really ran the chosen GPU test (on the fake GPU).
    assert "CudaKernels.SgdUpdateMatchesCpu" in (out / "logs" / "ctest_cuda.log").read_text()
    steps = _summary(out)
    for name in ["ctest_cuda", "sanitizer_memcheck", "sanitizer_racecheck", "suite", "report"]:
        assert steps[name].rstrip().endswith("ok"), steps[name]
    assert "skipped: needs 2 GPUs, found 1" in steps["nccl_sweep"]
    assert "FAKE GPU MODE" in (out / "summary.txt").read_text()
    assert not (out / "suite").exists()  # the suite's files are at the bundle's top level
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    # Every entry of the check's suite runs (cuda-ddp where MPI is built in) and is ok.
    bad = [(x["workload"], x["backend"], x["status"]) for x in rows
           if x["status"] != "ok" and not x["status"].startswith("skipped: built without MPI")]
    assert not bad
    gpu = [x for x in rows if x["device_kind"] == "gpu" and x["status"] == "ok"]
    assert {x["backend"] for x in gpu} >= {"cuda", "cuda-dp"}
    # The fake NVML's energy counter grows 1000 mJ per read: 1 J per repetition on one GPU.
    assert all(float(x["gpu_energy_j"]) == 1.0 for x in gpu)
    assert all(x["gpu_energy_j"] == "" for x in rows if x["device_kind"] == "cpu")


@needs_fake
def test_a_failed_step_fails_the_check_and_no_matplotlib_only_skips_the_report(tmp_path):
    # A python that cannot import matplotlib (site-packages off).
    python = _script(tmp_path / "python-bare", f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    # The build folder named relative to the repository, as `make gpu-check` names its own.
    r, out = _fake_check(tmp_path, 99, python, "CudaChecks.EveryCublasStatusHasItsName",
                         build=os.path.relpath(BUILD, REPO))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "gpu-check: FAILED" in r.stderr
    steps = _summary(out)
    assert "failed: exit 99" in steps["sanitizer_racecheck"]
    assert steps["sanitizer_memcheck"].rstrip().endswith("ok")
    assert "skipped: matplotlib not importable" in steps["report"]
    assert "Race reported" in (out / "sanitizer" / "racecheck.txt").read_text()
    assert (out / "results.csv").is_file() and (out / "env.json").is_file()
    assert not (out / "report.html").exists()
