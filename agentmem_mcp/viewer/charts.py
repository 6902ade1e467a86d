"""Charts as inline SVG built on the server: no script, no inline style (colours come from viewer.css
through class names), every label escaped. Two shapes are needed: a histogram and lines over time."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from .html import Markup, tag

WIDTH, HEIGHT, PAD = 560, 200, 32


def histogram(counts: Sequence[int], *, label: str, low: float = 0.0, high: float = 1.0) -> Markup:
    """Bars of `counts` over equal bins from `low` to `high`, each titled with its range and count."""
    top = max(counts, default=0) or 1
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    step = inner_w / max(len(counts), 1)
    bin_width = (high - low) / max(len(counts), 1)
    bars = []
    for i, count in enumerate(counts):
        h = inner_h * count / top
        x, y = PAD + i * step, PAD + inner_h - h
        span = f"{low + i * bin_width:.1f}-{low + (i + 1) * bin_width:.1f}"
        bars.append(tag("rect", tag("title", f"{span}: {count}"), x=f"{x + 2:.1f}", y=f"{y:.1f}",
                        width=f"{step - 4:.1f}", height=f"{h:.1f}", class_="bar"))
        bars.append(tag("text", count, x=f"{x + step / 2:.1f}", y=f"{y - 4:.1f}", class_="value"))
    ticks = [tag("text", f"{low + i * (high - low) / 5:.1f}", x=f"{PAD + i * inner_w / 5:.1f}",
                 y=str(HEIGHT - PAD + 16), class_="tick") for i in range(6)]
    axis = tag("line", x1=str(PAD), y1=str(PAD + inner_h), x2=str(PAD + inner_w), y2=str(PAD + inner_h),
               class_="axis")
    return tag("svg", tag("title", label), axis, *bars, *ticks, viewBox=f"0 0 {WIDTH} {HEIGHT}", role="img",
               class_="chart", aria_label=label)


def lines(times: Sequence[float], series: Mapping[str, Sequence[int]], *, label: str) -> Markup:
    """One line per series over `times` (unix times, ascending), with a legend and first/last dates."""
    if not times:
        return tag("p", "nothing stored yet", class_="muted")
    top = max((max(values) for values in series.values() if values), default=0) or 1
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    span = (times[-1] - times[0]) or 1.0

    def point(t: float, v: int) -> str:
        x = PAD + (inner_w * (t - times[0]) / span if len(times) > 1 else inner_w / 2)
        return f"{x:.1f},{PAD + inner_h - inner_h * v / top:.1f}"

    drawn, legend = [], []
    for n, (name, values) in enumerate(sorted(series.items())):
        points = " ".join(point(t, v) for t, v in zip(times, values))
        drawn.append(tag("polyline", tag("title", f"{name}: {values[-1]} now"), points=points,
                         class_=f"series s{n % 6}"))
        if len(times) == 1:
            x, y = point(times[0], values[0]).split(",")
            drawn.append(tag("circle", cx=x, cy=y, r="4", class_=f"dot s{n % 6}"))
        legend.append(tag("text", f"{name} ({values[-1]})", x=str(PAD + 8 + 120 * n), y=str(PAD - 12),
                          class_=f"legend s{n % 6}"))
    dates = [tag("text", time.strftime("%Y-%m-%d", time.gmtime(t)), x=f"{x:.1f}", y=str(HEIGHT - PAD + 16),
                 class_="tick") for t, x in ((times[0], PAD), (times[-1], PAD + inner_w - 60))]
    axis = tag("line", x1=str(PAD), y1=str(PAD + inner_h), x2=str(PAD + inner_w), y2=str(PAD + inner_h),
               class_="axis")
    return tag("svg", tag("title", label), axis, *drawn, *legend, *dates, tag("text", top, x="2", y=str(PAD),
               class_="tick"), viewBox=f"0 0 {WIDTH} {HEIGHT}", role="img", class_="chart", aria_label=label)
