"""A/A test of the regression gate: two runs of the same code are not a regression,
except at the false-alarm rate the gate's design allows.

Each seed writes two result folders (BASE, NEW) of K configurations whose samples/s
are drawn from one lognormal distribution per configuration (median THROUGHPUT, CV
drawn in [3%, 10%] per configuration: a noisy CI runner), with 3, 4 or 5 repetitions
per run, and judges them exactly as `compare.py` does (load_run, check_runs,
compare, gate).

The bound, from the design (compare.py's docstring): a configuration is a REGRESSION
only when the median slowdown exceeds the threshold AND the slowdown is beyond noise
(one-sided exact Mann-Whitney U p <= alpha, or disjoint ranges, which with >= 3
repetitions a side implies p <= alpha). Under A/A the exact test fires with
probability at most alpha, so per configuration
    P(false alarm) <= min(P(threshold fires), P(noise test fires)) <= alpha,
and a run of K independent configurations fails with probability
    1 - prod(1 - q_c)  <=  1 - (1 - alpha)^K.
The test measures all of these over SEEDS seeds and checks them, with binomial
slack (3 standard deviations). It prints the measured rates with pytest -s.

Why a run-level rate that is not small at high CV: every configuration is tested at
alpha with no correction for the K tests (with 3 repetitions the smallest possible p
is 1/C(6,3) = 0.05, so a correction would leave the gate blind); the threshold keeps
the per-configuration rate well below alpha only when the noise is small against it
(the quiet case below: CV 1-3%, a GPU runner).
"""

import json
import math
import os
import random

import pytest

import compare
import fixture_data as fx
from load import load_run

ALPHA = 0.05
THRESHOLD = 0.05
SEEDS = 300
# K = 24 configurations: cpu-omp at 1..12 threads in two workloads.
CONFIGS = [(w, ("cpu-omp", 1, "cpu", t)) for w in (fx.LINEAR, fx.MLP) for t in range(1, 13)]
MEDIAN = {fx.LINEAR: 3_000_000.0, fx.MLP: 40_000.0}


def _write(folder, run_id, samples):
    """samples: {(workload, key): [samples/s per repetition]}; no curves (optional file)."""
    os.makedirs(folder)
    rows = []
    for (workload, key), values in samples.items():
        for rep, sps in enumerate(values):
            row = fx.result_row("cpubox", workload, key, rep, sps, fx.WORKLOADS[workload]["ref_loss"])
            row["run_id"] = run_id
            rows.append(row)
    fx.write_csv(os.path.join(folder, "results.csv"), fx.RESULT_COLUMNS, rows)
    env = fx.env_for("cpubox")
    env["run_id"] = run_id
    with open(os.path.join(folder, "env.json"), "w", encoding="utf-8") as f:
        json.dump(env, f)
    return str(folder)


def _aa_run(tmp_path, seed, cv_range):
    """One A/A comparison: (exit status, the table's rows)."""
    rng = random.Random(seed)
    reps = rng.choice([3, 4, 5])
    base, new = {}, {}
    for workload, key in CONFIGS:
        cv = rng.uniform(*cv_range)
        sigma = math.sqrt(math.log(1 + cv * cv))        # lognormal with this CV
        draw = lambda: MEDIAN[workload] * rng.lognormvariate(0.0, sigma)  # noqa: E731
        base[(workload, key)] = [draw() for _ in range(reps)]
        new[(workload, key)] = [draw() for _ in range(reps)]
    b = load_run(_write(tmp_path / f"base-{seed}", f"20261122-000000-aa{seed}-base", base))
    n = load_run(_write(tmp_path / f"new-{seed}", f"20261122-000000-aa{seed}-new", new))
    compare.check_runs(b, n)
    rows, _ = compare.compare(b, n, THRESHOLD, ALPHA)
    problems = compare.gate(b, n, rows)
    return (problems[0][0] if problems else compare.EXIT_OK), rows


def _slack(p, n):
    return 3 * math.sqrt(max(p * (1 - p), 1e-4) / n)


@pytest.mark.parametrize("cv_range,run_bound", [
    ((0.03, 0.10), None),      # noisy CI runner: bounded by the design only
    ((0.01, 0.03), 0.10),      # quiet runner: a red A/A build at most 1 time in 10
], ids=["cv3-10%", "cv1-3%"])
def test_aa_false_alarm_rate_is_within_the_design_bound(cv_range, run_bound, tmp_path):
    k = len(CONFIGS)
    failed_runs = alarms = threshold = noise = 0
    codes = set()
    for seed in range(SEEDS):
        code, rows = _aa_run(tmp_path, seed, cv_range)
        codes.add(code)
        failed_runs += code != compare.EXIT_OK
        assert len(rows) == k and all(r["status"] == "compared" for r in rows)
        for r in rows:
            t = -r["change"] > THRESHOLD
            z = r["p"] <= ALPHA or (not r["overlap"] and r["change"] < 0)
            a = r["verdict"].startswith("REGRESSION")
            assert a == (t and z), r          # both must fire, and that is enough
            threshold += t
            noise += z
            alarms += a
    n_cfg = SEEDS * k
    q, q_thr, q_noise = alarms / n_cfg, threshold / n_cfg, noise / n_cfg
    run_rate = failed_runs / SEEDS
    expected_run = 1 - (1 - q) ** k            # independent configurations
    design_run = 1 - (1 - ALPHA) ** k
    print(f"\nA/A {cv_range[0]:.0%}-{cv_range[1]:.0%} CV, {SEEDS} seeds x {k} configurations: "
          f"per configuration: false alarm {q:.4f}, threshold fired {q_thr:.4f}, noise test "
          f"fired {q_noise:.4f}; per run: {run_rate:.3f} (independence predicts "
          f"{expected_run:.3f}; design bound {design_run:.3f})")
    assert codes <= {compare.EXIT_OK, compare.EXIT_REGRESSION}
    # The exact test is calibrated: under A/A it fires at most alpha of the time.
    assert q_noise <= ALPHA + _slack(ALPHA, n_cfg)
    # The gate's AND: never above either test alone, so never above alpha.
    assert q <= min(q_thr, q_noise) and q <= ALPHA + _slack(ALPHA, n_cfg)
    # A run fails when any configuration does: as independent tests predict, and
    # within 1 - (1 - alpha)^K.
    assert abs(run_rate - expected_run) <= _slack(expected_run, SEEDS)
    assert run_rate <= design_run + _slack(design_run, SEEDS)
    if run_bound is not None:
        assert run_rate <= run_bound
