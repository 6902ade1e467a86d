"""Charts: the server hands the figures to the page, uPlot (vendored in static/uplot/, drawn by static/charts.js)
draws them. A chart is a <figure> whose `data-chart` attribute holds its figures as JSON (escaped like every
attribute), with the same figures as a table below it, so the numbers read without a script too. No inline
script or style: the page's Content-Security-Policy stays strict."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .html import Markup, join, table, tag

SCRIPTS = ("/static/uplot/uPlot.iife.min.js", "/static/charts.js")
STYLES = ("/static/uplot/uPlot.min.css",)


def _figure(spec: dict[str, Any], data: Markup, *, label: str, id_: str) -> Markup:
    return tag("figure", tag("div", class_="chart-area", role="img", aria_label=label),
               tag("details", tag("summary", "the figures"), data),
               class_="chart", id=id_, data_chart=json.dumps(spec, separators=(",", ":")))


def histogram(counts: Sequence[int], *, label: str, id_: str, axis: str, low: float = 0.0, high: float = 1.0,
              unit: str = "memories") -> Markup:
    """Bars of `counts` over equal bins of `axis` from `low` to `high`."""
    width = (high - low) / max(len(counts), 1)
    bins = [f"{low + i * width:.1f}-{low + (i + 1) * width:.1f}" for i in range(len(counts))]
    centres = [round(low + (i + 0.5) * width, 6) for i in range(len(counts))]
    spec = {"kind": "bars", "label": label, "axis": axis, "unit": unit, "x": centres, "bins": bins,
            "series": [{"name": unit, "values": list(counts)}]}
    return _figure(spec, table(("range", unit), zip(bins, counts), class_="list figures"), label=label, id_=id_)


def lines(times: Sequence[float], series: Mapping[str, Sequence[int]], *, label: str, id_: str) -> Markup:
    """One line per series over `times` (unix times, ascending)."""
    if not times:
        return tag("p", "nothing stored yet", class_="muted", id=id_)
    names = sorted(series)
    spec = {"kind": "lines", "label": label, "unit": "memories", "x": list(times),
            "series": [{"name": name, "values": list(series[name])} for name in names]}
    rows = [(time.strftime("%Y-%m-%d", time.gmtime(t)), *(series[name][i] for name in names))
            for i, t in enumerate(times)]
    return _figure(spec, table(("week of", *names), rows, class_="list figures"), label=label, id_=id_)


def assets() -> Markup:
    """The <link> and <script> elements a page with charts needs (all served from the package)."""
    return join([*(tag("link", rel="stylesheet", href=path) for path in STYLES),
                 *(Markup(tag("script", src=path, defer=True)) for path in SCRIPTS)], "\n")
