"""Time to target: how long each configuration took to reach its `--target-loss`.

Why a section of its own: samples/s says how fast a backend steps, not how soon it
learns; rows written with `--target-loss X` carry target_reached, time_to_target_s
(seconds from the first timed epoch's start to the end of the first evaluation at or
below X, evaluations included: MLPerf's rule) and target_epoch (README "Time to
target"). Per configuration: the median time and epoch over the repetitions that
reached the target, and how many did; a configuration none of whose repetitions
reached it says so, and one that failed (in some or every repetition) says that, with
why, in the table and the plot. The section is absent when no row carries a target.

entries(summary) -> [Entry]; section_html(summary, figure); figures(summary) -> dict.
"""

from dataclasses import dataclass
from html import escape as esc

from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter

import fmt
import plots
import stats
from tables import _table

FORMULAS = [
    ("time to target", "per configuration with target_loss set: median of time_to_target_s over "
                       "the repetitions whose target_reached is true (time_to_target_s = wall time "
                       "from the first timed epoch's start to the end of the first evaluation with "
                       "loss ≤ target_loss, evaluations included); \"reached k of R\" counts them; "
                       "epoch = median target_epoch"),
]


@dataclass
class Entry:
    workload: str
    group: object          # derive.Group
    label: str
    target: float
    reached: int           # repetitions that reached the target
    reps: int              # repetitions measured (failed ones are not)
    median_s: float        # None when none reached it
    median_epoch: float
    failed: int = 0        # repetitions that failed


def entries(summary):
    out = []
    for w in summary.workloads:
        for g in w.groups + w.failed:
            target = g.config.get("target_loss")
            if target is None:
                continue
            hit = [r for r in g.rows if r.get("target_reached")]
            out.append(Entry(w.name, g, g.label(w.multi_host), target, len(hit), len(g.rows),
                             stats.median([r["time_to_target_s"] for r in hit]) if hit else None,
                             stats.median([r["target_epoch"] for r in hit]) if hit else None,
                             len(g.failures)))
    return out


def _reached_cell(e):
    if not e.reps:
        return f"failed: {esc(e.group.why_failed())}", "bad wrap"
    failed = f" ({esc(e.group.failed_text())})" if e.failed else ""
    if e.reached == 0:
        return f"not reached (0 of {e.reps}){failed}", "bad wrap"
    return f"{e.reached} of {e.reps}{failed}", "" if e.reached == e.reps and not e.failed else "warn wrap"


def table(es):
    head = ["workload", "configuration", "target loss", "reached", "time to target (s)",
            "epoch", "final loss"]
    rows = []
    for e in es:
        rows.append([(esc(e.workload), ""), (esc(e.label), ""), (fmt.loss(e.target), "num"),
                     _reached_cell(e), (fmt.seconds(e.median_s), "num"),
                     ("–" if e.median_epoch is None else f"{e.median_epoch:g}", "num"),
                     (fmt.loss(e.group.final_loss), "num")])
    return _table(head, rows, "results")


def plot(es):
    fig = figure(es)
    return None if fig is None else plots._png(fig)


def figure(es):
    """Median time to target per configuration that reached it (bars, seconds); one that
    failed in every repetition keeps its row, "failed: <why>" where its bar would be."""
    hit = [e for e in es if e.median_s is not None]
    if not hit:
        return None
    failed = [e for e in es if not e.reps]
    fig = Figure(figsize=(8.0, 1.4 + 0.38 * (len(hit) + len(failed))))
    ax = fig.add_subplot(1, 1, 1)
    ys = list(range(len(hit) + len(failed)))[::-1]
    ax.barh(ys[:len(hit)], [e.median_s for e in hit], color=[plots.backend_color(e.group) for e in hit])
    for y, e in zip(ys[len(hit):], failed):
        ax.text(0.01, y, f"✗ {plots.FAILED_TEXT}: {e.group.why_failed()}",
                transform=ax.get_yaxis_transform(), va="center", color=plots.FAILED_COLOR,
                fontsize="small")
    ax.set_yticks(ys, [f"{e.workload}: {e.label} (loss ≤ {e.target:g})" for e in hit + failed])
    ax.set_ylim(-0.6, len(ys) - 0.4)   # the rows without a bar too (autoscaling skips them)
    ax.xaxis.set_major_formatter(EngFormatter(unit="s"))
    ax.set_xlabel("time to target (median over the repetitions that reached it)")
    ax.set_title("time to target loss (evaluations included)")
    ax.grid(axis="x", alpha=0.3)
    return fig


def section_html(summary, figure):
    es = entries(summary)
    if not es:
        return ""
    return "".join([
        '<section id="time-to-target"><h2>Time to target</h2>',
        '<p class="meta">Runs with <code>--target-loss X</code>: the loss over the whole '
        "training set is evaluated after every timed epoch until it is ≤ X; the time runs "
        "from the first timed epoch's start to the end of that evaluation, evaluation time "
        "included (the clock does not pause, as in MLPerf). Median over the repetitions "
        "that reached the target.</p>",
        table(es), figure(plot(es), "time to target, seconds"), "</section>"])


def figures(summary):
    """{"time_to_target": [...]} for summary.json."""
    return {"time_to_target": [
        {"workload": e.workload, "configuration": e.label, "target_loss": e.target,
         "reached": e.reached, "repetitions": e.reps, "failed_repetitions": e.failed,
         "failed": e.group.why_failed() or None, "median_time_to_target_s": e.median_s,
         "median_target_epoch": e.median_epoch} for e in entries(summary)]}
