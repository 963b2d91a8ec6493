"""What a drawn matplotlib axis shows as numbers: the tick labels inside its view.

Why: Axis.get_ticklabels() also returns labels of ticks the locator placed outside the
view (never drawn), and empty ones; a test of what a reader sees wants neither.
"""


def tick_labels_in_view(axis):
    """The non-empty labels of the major and minor ticks within the axis's view, by
    position. The figure must have been drawn (plots._png draws it)."""
    lo, hi = sorted(axis.get_view_interval())
    ticks = list(zip(axis.get_majorticklocs(), axis.get_majorticklabels())) + \
        list(zip(axis.get_minorticklocs(), axis.get_minorticklabels()))
    return [t.get_text() for x, t in sorted(ticks, key=lambda p: p[0])
            if lo <= x <= hi and t.get_text()]
