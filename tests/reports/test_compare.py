"""compare.py: a real slowdown fails (exit 1); a small or noisy change passes (exit 0)."""

import fixture_data as fx
import compare

DDP4 = ("cuda-ddp", 4, "0,1,2,3", 16)
KEY = (fx.LINEAR, DDP4)


def _run(capsys, base, new, *extra):
    code = compare.main([base, new, *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def _line(out, backend, ws):
    return next(l for l in out.splitlines() if f"  {backend} " in l and f"  {ws}  " in l)


def test_same_run_passes(gpu_run, capsys):
    code, out, err = _run(capsys, gpu_run, gpu_run)
    assert code == 0
    assert "REGRESSION" not in out and err == ""


def test_injected_20_percent_slowdown_fails(gpu_run, tmp_path, capsys):
    new = fx.write_run(tmp_path / "slow", "gpubox", speed={KEY: 0.8})
    code, out, _ = _run(capsys, gpu_run, new, "--threshold", "5%")
    assert code == 1
    line = _line(out, "cuda-ddp", 4)
    assert "-20.0%" in line and "REGRESSION" in line and "disjoint" in line
    assert "p (new slower)" in out and "0.004" in line      # exact 5 vs 5: 1/252 = 0.004
    assert out.count("REGRESSION") == 1


def test_two_percent_change_within_noise_passes(gpu_run, tmp_path, capsys):
    # ±3% repetition spread around a 2% slower median: ranges overlap, below threshold.
    jit = {KEY: [0.0, 0.03, -0.03, 0.015, -0.015]}
    base = fx.write_run(tmp_path / "base", "gpubox", jitter=jit)
    new = fx.write_run(tmp_path / "new", "gpubox", jitter=jit, speed={KEY: 0.98})
    code, out, _ = _run(capsys, base, new)
    assert code == 0
    line = _line(out, "cuda-ddp", 4)
    assert "-2.0%" in line and "overlap" in line and line.rstrip().endswith("ok")


def test_slowdown_above_threshold_but_within_noise_passes(gpu_run, tmp_path, capsys):
    # 8% slower median, but the repetitions spread ±25%: not beyond noise.
    jit = {KEY: [0.0, 0.25, -0.25, 0.12, -0.12]}
    base = fx.write_run(tmp_path / "base", "gpubox", jitter=jit)
    new = fx.write_run(tmp_path / "new", "gpubox", jitter=jit, speed={KEY: 0.92})
    code, out, _ = _run(capsys, base, new, "--threshold", "5")
    assert code == 0
    assert "slower, within noise" in _line(out, "cuda-ddp", 4)


def test_single_repetition_uses_range_rule(tmp_path, capsys):
    base = fx.write_run(tmp_path / "base", "gpubox", reps=1)
    new = fx.write_run(tmp_path / "new", "gpubox", reps=1, speed={KEY: 0.8})
    code, out, err = _run(capsys, base, new)
    assert code == 1
    assert "fewer than 3 repetitions" in err


def test_faster_is_not_a_failure(gpu_run, tmp_path, capsys):
    new = fx.write_run(tmp_path / "fast", "gpubox", speed={KEY: 1.3})
    code, out, _ = _run(capsys, gpu_run, new)
    assert code == 0
    assert "+30.0%" in _line(out, "cuda-ddp", 4) and "faster" in _line(out, "cuda-ddp", 4)


def test_environment_differences_are_warned(gpu_run, tmp_path, capsys):
    env = fx.env_for("gpubox")
    env["build"]["flags"] = "-O2"
    new = fx.write_run(tmp_path / "new", "gpubox", env_update={"driver": "575.57.08",
                                                               "build": env["build"]})
    code, out, err = _run(capsys, gpu_run, new)
    assert code == 0
    assert "environments differ: driver: 580.65.06 -> 575.57.08" in err
    assert "environments differ: build flags: -O3 -march=native -> -O2" in err
    assert "Environment differences" in out


def test_failed_in_new_is_reported(tmp_path, capsys):
    base = fx.write_run(tmp_path / "base", "gpubox")
    new = fx.write_run(tmp_path / "new", "gpubox", drop={"cuda-dp"})
    code, out, err = _run(capsys, base, new)
    assert code == 0
    assert "missing in new" in _line(out, "cuda-dp", 2)
    assert "ran in base, missing in new" in err


def test_markdown_format(gpu_run, tmp_path, capsys):
    new = fx.write_run(tmp_path / "slow", "gpubox", speed={KEY: 0.8})
    code, out, _ = _run(capsys, gpu_run, new, "--format", "markdown")
    assert code == 1
    assert "| workload | backend |" in out and "**REGRESSION**" in out
