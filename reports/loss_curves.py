"""What the loss-curve plot of a workload must say in words: which curves coincide, and
whether the loss changed at all.

Why: five backends that learn the same thing draw one visible line, so a reader sees one
curve and five legend entries; and an autoscaled y-axis turns a loss that moved by 0.01%
into a steep descent. Both are decided here, from the per-epoch medians derive.py puts in
Group.curve ([(epoch, loss)]), so plots.py draws what this module says and the caption
(page.py) and summary.json repeat it.
"""

CURVE_RTOL = 1e-3      # curves differing by at most 0.1% of the larger value at every epoch coincide
FLAT_CHANGE = 0.01     # (max − min) / max over all curves below 1%: the loss did not really move
ABS_FLOOR = 1e-12


def coincide(a, b, rtol=CURVE_RTOL):
    """True when curves a and b ([(epoch, loss)]) have the same epochs and agree within rtol."""
    if [e for e, _ in a] != [e for e, _ in b]:
        return False
    return all(abs(x - y) <= rtol * max(abs(x), abs(y), ABS_FLOOR) for (_, x), (_, y) in zip(a, b))


def clusters(groups, rtol=CURVE_RTOL):
    """Groups with a curve, in order, gathered into lists of coinciding curves: each curve
    joins the first cluster whose first curve it coincides with."""
    out = []
    for g in groups:
        if not g.curve:
            continue
        for c in out:
            if coincide(c[0].curve, g.curve, rtol):
                c.append(g)
                break
        else:
            out.append([g])
    return out


def relative_change(groups):
    """(largest − smallest) / largest |loss| over the points of every curve of at least two
    epochs (one epoch has no change over training); None when there is none."""
    vals = [v for g in groups if len(g.curve) > 1 for _, v in g.curve]
    if not vals:
        return None
    top = max(abs(v) for v in vals)
    return (max(vals) - min(vals)) / max(top, ABS_FLOOR)


def is_flat(groups):
    change = relative_change(groups)
    return change is not None and change < FLAT_CHANGE


def _percent(v):
    """'0.1%', '0.6%', '1%'; below 0.01% just that, not '5.8e-07%'."""
    return f"{100 * v:.2g}%" if v >= 1e-4 else "below 0.01%"


def caption(w):
    """The figure caption: what is drawn, which curves coincide, whether the loss moved."""
    text = f"{w.name}: training loss per epoch (all backends overlaid)"
    same = [c for c in clusters(w.groups) if len(c) > 1]
    for c in same:
        names = ", ".join(g.label(w.multi_host) for g in c)
        text += (f". {names} coincide (within {_percent(CURVE_RTOL)} at every epoch): "
                 "drawn as one line")
    change = relative_change(w.groups)
    if change is None and any(g.curve for g in w.groups):
        text += ". One epoch only: no change over training to show"
    if change is not None and change < FLAT_CHANGE:
        text += (f". The loss changed by less than {_percent(FLAT_CHANGE)} over training "
                 f"({_percent(change)}): the y-axis starts at 0 so that the flat line looks flat")
    return text
