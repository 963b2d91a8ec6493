"""Loss curves: coinciding curves are found and named, epochs tick as integers, and a
loss that barely moved is drawn on an axis from 0 and said to be flat.

Hand-made curves ([(epoch, loss)]) on stand-in groups test the rules; the fixture run
(every backend trained the same loss to 2e-6) tests what the report says.
"""

import os
from dataclasses import dataclass, field

import loss_curves
import plots
import render
import derive
from load import load_run


@dataclass
class G:
    """The part of derive.Group the loss-curve rules read."""
    name: str
    curve: list
    color: int = 0
    multi_host: bool = False
    settings: str = ""
    rows: list = field(default_factory=list)

    def label(self, with_origin=False):
        return self.name


@dataclass
class W:
    name: str
    groups: list
    multi_host: bool = False


FALLING = [(1, 2.0), (2, 1.0), (3, 0.5)]


def test_coincide_within_the_tolerance_only():
    near = [(e, v * (1 + 0.9e-3)) for e, v in FALLING]   # 0.09% apart: below 0.1%
    far = [(e, v * (1 + 1.1e-3)) for e, v in FALLING]    # 0.11% apart
    assert loss_curves.coincide(FALLING, near)
    assert not loss_curves.coincide(FALLING, far)
    assert not loss_curves.coincide(FALLING, FALLING[:2])              # other epochs
    assert not loss_curves.coincide(FALLING, [(1, 2.0), (2, 1.0), (4, 0.5)])


def test_clusters_gather_coinciding_curves_in_order():
    a, b = G("a", FALLING), G("b", [(e, v * 1.0005) for e, v in FALLING])
    c, d = G("c", [(1, 2.0), (2, 1.5), (3, 1.2)]), G("d", [])
    assert [[g.name for g in cl] for cl in loss_curves.clusters([a, c, b, d])] == [["a", "b"], ["c"]]


def test_relative_change_and_flatness():
    flat = G("flat", [(1, 1.0), (2, 0.998), (3, 0.997)])
    assert loss_curves.relative_change([flat]) == (1.0 - 0.997) / 1.0
    assert loss_curves.is_flat([flat])
    assert not loss_curves.is_flat([G("f", FALLING)])                  # (2 − 0.5) / 2 = 75%
    assert loss_curves.relative_change([G("none", [])]) is None
    assert loss_curves.relative_change([G("one epoch", [(1, 1.0)]), G("b", [(1, 2.0)])]) is None
    tiny = G("tiny", [(1, 1.0), (2, 1.0 - 1e-8)])
    assert "(below 0.01%)" in loss_curves.caption(W("wl", [tiny]))


def test_caption_names_coinciding_curves_and_a_flat_loss():
    w = W("wl", [G("cpu-omp", [(1, 1.0), (2, 0.999)]), G("cuda", [(1, 1.0), (2, 0.999)]),
                 G("other", [(1, 1.005), (2, 1.004)])])
    text = loss_curves.caption(w)
    assert "cpu-omp, cuda coincide (within 0.1% at every epoch): drawn as one line" in text
    assert "other" not in text.split("coincide")[0]
    assert "The loss changed by less than 1% over training (0.6%)" in text   # (1.005 − 0.999) / 1.005


def test_flat_loss_axis_starts_at_zero_and_epochs_are_integers():
    w = W("wl", [G("a", [(1, 1.0), (2, 0.999), (3, 0.9985), (4, 0.998)])])
    ax = plots.loss_figure(w).axes[0]
    assert ax.get_ylim()[0] == 0.0 and ax.get_yscale() == "linear"
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    lone = plots.loss_figure(W("wl", [G("a", [(1, 6.9)])])).axes[0]
    assert list(lone.get_xticks()) == [1.0]                            # not 0.945, 0.960, ...
    assert "One epoch only" in loss_curves.caption(W("wl", [G("a", [(1, 6.9)])]))
    # A falling loss keeps matplotlib's own range (not pinned at 0).
    falling = plots.loss_figure(W("wl", [G("a", [(1, 2.0), (2, 1.5), (3, 1.2)])])).axes[0]
    assert falling.get_ylim()[0] > 1.0


def test_one_line_per_cluster_with_every_name_in_the_legend():
    w = W("wl", [G("a", FALLING), G("b", FALLING, color=1), G("c", [(1, 3.0), (2, 2.0), (3, 1.0)])])
    ax = plots.loss_figure(w).axes[0]
    assert len(ax.get_lines()) == 2
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["a, b\n(coincide: one line)", "c"]


def test_fixture_report_says_which_backends_coincide(gpu_run):
    # Every trainbench row's loss is the reference's × (1 + 2e-6): one visible line.
    assert render.main([gpu_run]) == 0
    with open(os.path.join(gpu_run, "report.html"), encoding="utf-8") as f:
        html = f.read()
    assert ("reference (1 thr), cpu-omp (16 thr), cuda (GPU 0), cuda-dp (GPU 0), cuda-dp ×2 (GPU 0,1), "
            "cuda-dp ×4 (GPU 0,1,2,3), cuda-ddp (GPU 0), cuda-ddp ×2 (GPU 0,1), "
            "cuda-ddp ×4 (GPU 0,1,2,3) coincide (within 0.1% at every epoch)") in html
    lin = derive.summarize([load_run(gpu_run)]).workloads[0]
    assert len(loss_curves.clusters(lin.groups)) == 1
    assert not loss_curves.is_flat(lin.groups)     # the fixture's loss falls 5× over training
