"""A configuration that failed in every repetition is drawn where its figure would be
(reports/plots.py): a throughput row saying "failed: <why>" where its bar would be, a
red ✗ at its world size in the scaling panel of its base, and no line joining the
points on either side of it. It used to vanish from every plot, reading as "not run"."""

import math

import pytest
from matplotlib.figure import Figure

import fixture_data as fx
import plots

LIN = fx.LINEAR
DDP2, DDP4 = ("cuda-ddp", 2, "0,1", 16), ("cuda-ddp", 4, "0,1,2,3", 16)
KILLED = {r: "failed: rank 2 exited with signal 9 (Killed)" for r in range(5)}


@pytest.fixture
def figures(monkeypatch):
    """Every Figure plots.py renders, by title, once drawn (tick labels exist then)."""
    out = {}
    real_png = plots._png

    def capture(fig):
        png = real_png(fig)
        title = fig._suptitle.get_text() if fig._suptitle else fig.get_axes()[0].get_title()
        out[title] = fig
        return png
    monkeypatch.setattr(plots, "_png", capture)
    return out


def _texts(ax):
    return [t.get_text() for t in ax.texts]


def test_throughput_keeps_a_row_for_the_failed_configuration(tmp_path, figures):
    folder = fx.write_run(tmp_path / "f", "gpubox", failed_reps={(LIN, DDP4): KILLED})
    fx.render_html(folder)
    (ax,) = figures[f"{LIN}: training throughput"].get_axes()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[-1] == "cuda-ddp ×4 (GPU 0,1,2,3)" and len(labels) == 9   # 8 measured + it
    assert _texts(ax) == ["✗ failed: rank 2 exited with signal 9 (Killed)"]
    (text,) = ax.texts
    assert text.get_position()[1] == 0                                        # on its own row
    assert ax.get_ylim()[0] < 0 < ax.get_ylim()[1]


def test_the_scaling_panel_marks_the_failed_world_size_and_breaks_the_line(tmp_path, figures):
    folder = fx.write_run(tmp_path / "f", "gpubox", failed_reps={(LIN, DDP2): KILLED})
    fx.render_html(folder)
    (ax,) = [a for a in figures[f"{LIN}: scaling"].get_axes() if a.get_visible()]
    assert "cuda-ddp ×2 failed" in _texts(ax)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4"]
    ddp = next(c for c in ax.containers if c.get_label() == "cuda-ddp")   # errorbar's
    xs, ys = ddp.lines[0].get_data()
    assert list(xs) == [1, 2, 4] and math.isnan(ys[1])        # 1 and 4 are not joined across 2
    assert not math.isnan(ys[0]) and not math.isnan(ys[2])


def test_a_base_whose_every_member_failed_still_has_its_panel(tmp_path, figures):
    failed = {(LIN, k): KILLED for k in (DDP2, DDP4, ("cuda-dp", 2, "0,1", 16),
                                         ("cuda-dp", 4, "0,1,2,3", 16))}
    folder = fx.write_run(tmp_path / "f", "gpubox", failed_reps=failed)
    fx.render_html(folder)
    (ax,) = [a for a in figures[f"{LIN}: scaling"].get_axes() if a.get_visible()]
    assert sorted(_texts(ax)) == ["cuda-ddp ×2 failed", "cuda-ddp ×4 failed",
                                  "cuda-dp ×2 failed", "cuda-dp ×4 failed"]
    _assert_apart(ax, ax.texts)   # two failed at 2 and two at 4: they were written over each other


def _assert_apart(ax, texts):
    """No two of the drawn texts overlap."""
    renderer = ax.figure.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            assert not box_a.overlaps(box_b), f"'{a}' overlaps '{b}'"


def test_failed_labels_at_one_or_neighbouring_sizes_are_stacked_apart():
    """Left to right, each label goes to the lowest row where it overlaps none before it: a
    lone one stays just above the axis, at its ✗."""
    fig = Figure(figsize=(5.2, 4.2))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([1, 2, 4, 8], [4, 7, 9, 10])
    labels = [(1, "cuda-ddp ×1 failed"), (2, "cuda-dp ×2 failed"), (2, "cuda-ddp ×2 failed"),
              (4, "cpu-ddp (4 thr) ×4 failed"), (8, "cuda ×8 failed")]
    for x, text in labels:
        plots.mark_failed(ax, x, text)
    ax.set_xscale("log", base=2)   # after the marks, as the scaling plot sets it
    ax.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
    plots._png(fig)
    _assert_apart(ax, ax.texts)
    rows = {t.get_text(): t.xyann for t in ax.texts}
    assert rows["cuda-ddp ×1 failed"] == (5.0, 6.0)                  # the first, on the axis
    assert rows["cuda-dp ×2 failed"][1] != rows["cuda-ddp ×2 failed"][1]   # one above the other
    assert max(y for _, y in rows.values()) < 60                     # rows, not a tower
    assert {t.xy for t in ax.texts} == {(x, 0) for x, _ in labels}  # each still at its size
    assert sorted(t.get_text() for t in ax.texts) == sorted(text for _, text in labels)
