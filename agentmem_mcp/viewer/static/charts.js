// agentmem viewer: draws each <figure class="chart" data-chart="..."> with uPlot (static/uplot/, vendored).
// The figures come from the server as JSON in the attribute; labels are drawn on a canvas or set as text.
"use strict";
(function () {
  const COLOURS = ["#2458a6", "#c0631b", "#2f8a4a", "#8a3fa0", "#a61b1b", "#4a5561"];
  const HEIGHT = 220;

  function dateOf(seconds) {
    return new Date(seconds * 1000).toISOString().slice(0, 10);
  }

  function options(spec, width) {
    const bars = spec.kind === "bars";
    const series = [{ label: bars ? "range" : "week of", value: (u, v) => v == null ? "" : bars
      ? spec.bins[spec.x.indexOf(v)] || "" : dateOf(v) }];
    spec.series.forEach((s, i) => {
      const colour = COLOURS[i % COLOURS.length];
      series.push(bars
        ? { label: s.name, stroke: colour, fill: colour + "bb", width: 1,
            paths: uPlot.paths.bars({ size: [0.85, 80] }), points: { show: false } }
        : { label: s.name, stroke: colour, width: 2, points: { show: spec.x.length < 3, size: 7, fill: colour } });
    });
    const step = spec.x.length > 1 ? spec.x[1] - spec.x[0] : 1;
    const first = spec.x[0], last = spec.x[spec.x.length - 1];
    const edges = spec.x.map((x) => x - step / 2).concat([last + step / 2]);
    const WEEK = 7 * 86400;
    return {
      width: width,
      height: HEIGHT,
      series: series,
      scales: {
        x: bars ? { time: false, range: [first - step / 2, last + step / 2] }
          : { time: false, range: first === last ? [first - WEEK, last + WEEK] : [first, last] },
        y: { range: (u, min, max) => [0, max > 0 ? max * 1.08 : 1] },
      },
      axes: [
        bars ? { splits: () => edges, values: (u, splits) => splits.map((v) => v.toFixed(1)), label: spec.axis,
                 labelSize: 24 }
          : { values: (u, splits) => splits.map(dateOf), space: 90, label: "week created", labelSize: 24 },
        { size: 56, label: spec.unit, labelSize: 20 },
      ],
      padding: [8, 30, 0, 0],
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
    };
  }

  function draw(figure) {
    const spec = JSON.parse(figure.dataset.chart);
    const area = figure.querySelector(".chart-area");
    const data = [spec.x, ...spec.series.map((s) => s.values)];
    const plot = new uPlot(options(spec, Math.max(280, area.clientWidth)), data, area);
    figure.chart = plot; // for a test to read what was drawn
    figure.dataset.drawn = String(spec.x.length);
    return plot;
  }

  const plots = Array.from(document.querySelectorAll("figure.chart[data-chart]")).map(draw);
  let pending = 0;
  window.addEventListener("resize", () => {
    window.clearTimeout(pending);
    pending = window.setTimeout(() => plots.forEach((plot) => {
      const area = plot.root.parentNode;
      plot.setSize({ width: Math.max(280, area.clientWidth), height: HEIGHT });
    }), 150);
  });
})();
