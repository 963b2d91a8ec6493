"""Number formatting shared by the HTML report and the compare table.

Why: one spelling per kind of number, so a value computed by hand from a
fixture can be found verbatim in the report (the tests do exactly that). A figure that
is not a finite number (a ratio that overflowed) is shown as "–", never "inf" or "nan",
as summary.json writes it null; a loss or its relative error shows "nan" (load.py refuses
a NaN loss in an ok row, so only one computed from rows could be).
"""

import math


def _missing(v):
    """True where a figure cannot be shown as a number: absent, or not finite."""
    return v is None or not math.isfinite(v)


def sps(v):
    """Samples per second, 4 significant digits: '712.8 M', '5.22 M', '40 k', '2,500', '12.3'."""
    if _missing(v):
        return "–"
    for suffix, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= 10 * size or (suffix != "k" and abs(v) >= size):
            return f"{v / size:.4g} {suffix}"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def seconds(v):
    return "–" if _missing(v) else f"{v:.4g}"


def speedup(v):
    """'3.60×'; below 0.1 two significant digits ('0.0025×') so slow rows do not read 0.00×."""
    if _missing(v):
        return "–"
    return f"{v:.2f}×" if v >= 0.1 else f"{v:.2g}×"


def percent(v, digits=1):
    """'12.5%'; from 1,000,000% on in exponent form ('5e+301%'), not 300 digits."""
    if _missing(v):
        return "–"
    return f"{100.0 * v:.{digits}f}%" if abs(v) < 1e4 else f"{100.0 * v:.3g}%"


def signed_percent(v):
    if _missing(v):
        return "–"
    return f"{100.0 * v:+.1f}%" if abs(v) < 1e4 else f"{100.0 * v:+.3g}%"


def loss(v):
    if v is None:
        return "–"
    return "nan" if math.isnan(v) else f"{v:.6g}"


def rel_err(v):
    if v is None:
        return "–"
    return "nan" if math.isnan(v) else f"{v:.1e}"


def accuracy(v):
    return "–" if _missing(v) else f"{100.0 * v:.2f}%"


def pvalue(v):
    return "–" if _missing(v) else f"{v:.3f}"


def nbytes(v):
    """Bytes as GiB/MiB/KiB with 3 significant digits."""
    if v is None:
        return "–"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= size:
            return f"{v / size:.3g} {unit}"
    return f"{v} B"
