"""stats.py: Mann-Whitney U against brute force and textbook values; CV; range overlap."""

import itertools
import math
import random

import pytest

import stats


def brute_force_p_less(x, y):
    """P(U <= U_obs) by relabelling every split of the pooled sample (mid-ranks for ties)."""
    pooled = list(x) + list(y)
    n = len(x)
    u_obs = stats.u_statistic(x, y)
    total = below = 0
    for idx in itertools.combinations(range(len(pooled)), n):
        xs = [pooled[i] for i in idx]
        ys = [pooled[i] for i in range(len(pooled)) if i not in idx]
        total += 1
        below += stats.u_statistic(xs, ys) <= u_obs + 1e-9
    return below / total


def test_textbook_values():
    # Completely separated 3 vs 3: the smallest possible p is 1 / C(6, 3) = 0.05.
    u, p, method = stats.mann_whitney_less([1, 2, 3], [4, 5, 6])
    assert (u, method) == (0.0, "exact") and p == pytest.approx(0.05)
    u, p, _ = stats.mann_whitney_less([4, 5, 6], [1, 2, 3])
    assert u == 9.0 and p == 1.0
    # 5 vs 5 separated: 1 / 252.
    assert stats.mann_whitney_less(range(5), range(10, 15))[1] == pytest.approx(1 / 252)
    # Two reps each can never reach 0.05: 1 / C(4, 2) = 1/6.
    assert stats.mann_whitney_less([1, 2], [3, 4])[1] == pytest.approx(1 / 6)


@pytest.mark.parametrize("seed", range(20))
def test_exact_matches_brute_force(seed):
    rng = random.Random(seed)
    n, m = rng.randint(1, 6), rng.randint(1, 6)
    ties = seed % 2 == 1
    draw = (lambda: rng.randint(0, 4)) if ties else rng.random
    x, y = [draw() for _ in range(n)], [draw() for _ in range(m)]
    _, p, _ = stats.mann_whitney_less(x, y)
    assert p == pytest.approx(brute_force_p_less(x, y))


def test_normal_approximation_is_close_for_large_samples():
    rng = random.Random(7)
    x = [rng.gauss(0.0, 1.0) for _ in range(60)]
    y = [rng.gauss(0.4, 1.0) for _ in range(60)]
    _, p_exact, method = stats.mann_whitney_less(x, y)
    assert method == "normal"      # 60*60 is beyond the exact recursion
    u = stats.u_statistic(x, y)
    z = (u - 1800 + 0.5) / math.sqrt(60 * 60 * 121 / 12)
    assert p_exact == pytest.approx(0.5 * math.erfc(-z / math.sqrt(2)))
    assert p_exact < 0.05


def test_all_tied_is_no_evidence():
    assert stats.mann_whitney_less([1.0] * 3, [1.0] * 3)[1] == 1.0
    assert stats.mann_whitney_less([1.0] * 40, [1.0] * 40)[1] == 1.0


def test_cv_and_overlap():
    assert stats.cv([1.0]) is None
    assert stats.cv([9.0, 10.0, 11.0]) == pytest.approx(0.1)
    assert stats.ranges_overlap([1, 3], [3, 4])
    assert not stats.ranges_overlap([1, 2], [2.5, 4])


# --- cross-check against SciPy where it is installed -----------------------------------
# The gate does not depend on SciPy (Debian: python3-scipy); when present, its
# mannwhitneyu must agree with ours: exact (no ties), normal approximation with tie and
# continuity corrections (ties or large samples), and the exact permutation
# distribution with mid-ranks (small samples with ties) through permutation_test.

def _scipy():
    try:
        import scipy.stats
    except ImportError:
        pytest.skip("scipy is not installed (Debian: apt-get install python3-scipy); "
                    "our Mann-Whitney U is still checked against brute force above")
    return scipy.stats


@pytest.mark.parametrize("seed", range(40))
def test_exact_p_matches_scipy(seed):
    st = _scipy()
    rng = random.Random(seed)
    n, m = rng.randint(1, 9), rng.randint(1, 9)
    x = [rng.lognormvariate(0, 0.05) for _ in range(n)]
    y = [rng.lognormvariate(0.02 * (seed % 3), 0.05) for _ in range(m)]
    u, p, method = stats.mann_whitney_less(x, y)
    ref = st.mannwhitneyu(x, y, alternative="less", method="exact")
    assert method == "exact"
    assert u == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_normal_approximation_matches_scipy(seed):
    st = _scipy()
    rng = random.Random(100 + seed)
    n, m = rng.randint(51, 80), rng.randint(51, 80)
    ties = seed % 2 == 1
    draw = (lambda: float(rng.randint(0, 20))) if ties else (lambda: rng.gauss(0, 1))
    x = [draw() for _ in range(n)]
    y = [draw() + 0.3 for _ in range(m)]
    u, p, method = stats.mann_whitney_less(x, y)
    ref = st.mannwhitneyu(x, y, alternative="less", method="asymptotic", use_continuity=True)
    assert method == "normal"
    assert u == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_exact_with_ties_matches_scipy_permutation_test(seed):
    st = _scipy()
    rng = random.Random(200 + seed)
    n, m = rng.randint(2, 6), rng.randint(2, 6)
    x = [float(rng.randint(0, 4)) for _ in range(n)]
    y = [float(rng.randint(1, 5)) for _ in range(m)]
    if len(set(x + y)) == len(x + y):
        x[0] = y[0]                       # make sure the sample ties
    u, p, method = stats.mann_whitney_less(x, y)
    assert method == "exact-ties"

    def u_x(a, b, axis):
        import numpy as np
        return (np.sign(a[..., :, None] - b[..., None, :]) + 1).sum(axis=(-1, -2)) / 2.0
    ref = st.permutation_test((x, y), u_x, vectorized=True, n_resamples=math.inf,
                              alternative="less", permutation_type="independent")
    assert u == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue, rel=1e-9)


def test_the_gate_verdicts_agree_with_scipy():
    """judge() on the p-values SciPy computes: the same REGRESSION calls on A/A-like and
    slowed-down samples (3-5 repetitions, CV 3-10%)."""
    st = _scipy()
    import compare
    rng = random.Random(11)
    for _ in range(300):
        reps, cv = rng.choice([3, 4, 5]), rng.uniform(0.03, 0.10)
        sigma = math.sqrt(math.log(1 + cv * cv))
        slow = rng.choice([0.0, 0.0, 0.08, 0.2])
        base = [rng.lognormvariate(0, sigma) for _ in range(reps)]
        new = [(1 - slow) * rng.lognormvariate(0, sigma) for _ in range(reps)]
        r = compare.judge(base, new, 0.05, 0.05)
        # slower than the margin: against base x (1 - max(threshold, either run's CV))
        shifted = [b * (1 - max(0.05, r["cv_base"], r["cv_new"])) for b in base]
        p = st.mannwhitneyu(new, shifted, alternative="less", method="exact").pvalue
        expected = -r["change"] > 0.05 and (p <= 0.05 or max(new) < min(shifted))
        assert r["verdict"].startswith("REGRESSION") == expected
        assert r["p"] == pytest.approx(p, rel=1e-9)
