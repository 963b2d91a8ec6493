"""Every text in the report's figures is plain: mathtext is off (a workload name with a
"$" raised, or was typeset), so no tick label may be left in TeX ("$\\mathdefault{10^{4}}$",
what matplotlib's default log formatter writes). Drawn from the fixture GPU run, whose
CPU and GPU rows put the throughput plot on a log axis."""

import fixture_data as fx
import plots
import roofline


def test_no_figure_text_is_left_in_tex(gpu_run, monkeypatch):
    figures = []
    real_png = plots._png

    def capture(fig):
        figures.append(fig)
        return real_png(fig)  # draws it: tick labels exist only after a draw
    monkeypatch.setattr(plots, "_png", capture)
    monkeypatch.setattr(roofline, "_png", capture)
    fx.render_html(gpu_run)
    assert figures
    logs, texts = 0, []
    for fig in figures:
        for ax in fig.get_axes():
            logs += (ax.get_xscale() == "log") + (ax.get_yscale() == "log")
            for axis in (ax.xaxis, ax.yaxis):
                texts += [t.get_text() for t in axis.get_ticklabels(which="both")]
            texts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
    assert logs > 0, "no log axis drawn: the fixture does not exercise log tick labels"
    tex = [t for t in texts if "$" in t or "mathdefault" in t]
    assert not tex, tex
