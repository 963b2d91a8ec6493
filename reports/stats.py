"""Small statistics for repetition samples: median, CV, Mann-Whitney U, range overlap.

Why here and not scipy: the suite depends only on matplotlib and numpy, and with
3-10 repetitions per configuration the exact null distribution of U is cheap, so
we compute it ourselves (and test it against brute-force enumeration).

Mann-Whitney U, one-sided "x is smaller than y" (used for "new run is slower"):
  U_x = #{(i, j): x_i > y_j} + 0.5 * #{(i, j): x_i == y_j}
  p   = P(U <= U_x observed) under H0 (both samples from one distribution).
Method: without ties, the exact distribution by the recursion
  c(n, m, u) = c(n-1, m, u-m) + c(n, m-1, u)  (is the largest value an x or a y?);
with ties, exact enumeration of every split of the pooled mid-ranks when there
are at most EXACT_ENUM_LIMIT splits; otherwise the normal approximation with tie
correction and continuity correction.
"""

import itertools
import math
import statistics

EXACT_ENUM_LIMIT = 50_000     # splits C(n+m, n) enumerated exactly when values tie
EXACT_DP_MAX_PRODUCT = 2_500  # n*m up to which the tie-free recursion is used


def median(values):
    """The middle value, or the mean of the two middle ones halved before they are added:
    (a + b) / 2 overflows to inf for two values above 9e307, a / 2 + b / 2 does not (and
    rounds the same, halving being exact)."""
    s = sorted(values)
    if not s:
        raise statistics.StatisticsError("no median for an empty sample")
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else s[mid - 1] / 2 + s[mid] / 2


def cv(values):
    """Coefficient of variation: sample standard deviation (n-1) / mean; None for n < 2.
    Computed on the values divided by the largest magnitude (the ratio does not change):
    fmean's fsum raises OverflowError on a sum above 1.8e308 (two samples/s of 1e308)."""
    if len(values) < 2:
        return None
    scale = max(abs(v) for v in values)
    if scale == 0 or not math.isfinite(scale):
        return None
    scaled = [v / scale for v in values]
    mean = statistics.fmean(scaled)
    if mean == 0:
        return None
    return statistics.stdev(scaled) / abs(mean)


def ranges_overlap(x, y):
    """True when [min x, max x] and [min y, max y] share at least one point."""
    return min(x) <= max(y) and min(y) <= max(x)


def u_statistic(x, y):
    """U for x: pairs where x beats y, ties counting one half."""
    u = 0.0
    for a in x:
        for b in y:
            u += 1.0 if a > b else 0.5 if a == b else 0.0
    return u


def _midranks(values):
    """Ranks 1..N of the pooled values, tied values sharing the mean of their ranks."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


_counts_cache = {}


def _u_counts(n, m):
    """counts[u] = number of orderings of n x's and m y's with U_x == u (no ties)."""
    key = (n, m)
    if key in _counts_cache:
        return _counts_cache[key]
    if n == 0 or m == 0:
        result = [1]
    else:
        a = _u_counts(n - 1, m)   # largest value is an x: it beats all m y's
        b = _u_counts(n, m - 1)   # largest value is a y: adds nothing to U_x
        result = [0] * (n * m + 1)
        for u, c in enumerate(a):
            result[u + m] += c
        for u, c in enumerate(b):
            result[u] += c
    _counts_cache[key] = result
    return result


def mann_whitney_less(x, y):
    """One-sided Mann-Whitney U test of "x tends to be smaller than y".

    Returns (u_x, p_value, method) with method in {"exact", "exact-ties", "normal"}.
    """
    n, m = len(x), len(y)
    if n == 0 or m == 0:
        raise ValueError("mann_whitney_less needs two non-empty samples")
    u_obs = u_statistic(x, y)
    pooled = list(x) + list(y)
    ties = len(set(pooled)) < len(pooled)
    if not ties and n * m <= EXACT_DP_MAX_PRODUCT:
        counts = _u_counts(n, m)
        below = sum(counts[: int(u_obs) + 1])   # u_obs is an integer without ties
        return u_obs, below / math.comb(n + m, n), "exact"
    if ties and math.comb(n + m, n) <= EXACT_ENUM_LIMIT:
        ranks = _midranks(pooled)
        offset = n * (n + 1) / 2.0
        eps = 1e-9
        total = below = 0
        for idx in itertools.combinations(range(n + m), n):
            total += 1
            if sum(ranks[i] for i in idx) - offset <= u_obs + eps:
                below += 1
        return u_obs, below / total, "exact-ties"
    return u_obs, _normal_p_less(pooled, n, m, u_obs), "normal"


def _normal_p_less(pooled, n, m, u_obs):
    """Normal approximation with tie and continuity corrections."""
    big_n = n + m
    tie_term = 0.0
    for v in set(pooled):
        t = pooled.count(v)
        tie_term += t ** 3 - t
    var = n * m / 12.0 * ((big_n + 1) - tie_term / (big_n * (big_n - 1)))
    if var <= 0:
        return 1.0   # every value tied: no evidence either way
    z = (u_obs - n * m / 2.0 + 0.5) / math.sqrt(var)
    return 0.5 * math.erfc(-z / math.sqrt(2.0))
