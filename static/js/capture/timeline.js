// Samples over time per thread (Plotly, from the plotly package's own bundle) and a
// FlameScope-style sub-second heat map. Selecting a range on either restricts every view.
"use strict";

import {plotlyText} from "../plotly-text.js";

let plotly = null;

/** Plotly (4.8 MB) is fetched when a chart is first drawn (main.js: when the timeline
 * comes into view), not with the page: a script tag in the head held the module that
 * draws the flame graph until it had run. */
export function loadPlotly(url) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!plotly) {
    plotly = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = url;
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => reject(new Error("Plotly could not be loaded"));
      document.head.append(s);
    });
  }
  return plotly;
}

export function drawTimeline(el, data, onRange) {
  if (!window.Plotly || !data.series.length) {
    el.textContent = "No timestamps in this capture.";
    return;
  }
  const traces = data.series.map((s) => ({
    type: "scatter", mode: "lines", stackgroup: "threads",
    name: plotlyText(`${s.comm} ${s.tid ?? ""}`.trim()),  // thread names come from captures
    x: s.counts.map((_, i) => +(i * data.bucket_s).toFixed(3)),
    y: s.counts,
  }));
  const layout = {
    height: 220, margin: {l: 40, r: 10, t: 10, b: 35}, dragmode: "select",
    xaxis: {title: {text: "seconds"}}, yaxis: {title: {text: "samples"}},
    showlegend: data.series.length <= 12, legend: {orientation: "h"},
  };
  window.Plotly.newPlot(el, traces, layout, {displaylogo: false, responsive: true});
  el.on("plotly_selected", (ev) => {
    if (ev && ev.range && ev.range.x) onRange(ev.range.x[0], ev.range.x[1]);
  });
}

export function drawHeatmap(el, data, onRange) {
  if (!window.Plotly || !data.heatmap) return;
  const rows = data.heatmap.rows_per_s;
  const cells = data.heatmap.cells;
  // the colour scale runs from 0 (Plotly takes zmin only with zmax): from the data's own
  // minimum a uniform spin would show as bold stripes
  const zmax = Math.max(1, ...cells.map((row) => Math.max(...row)));
  const trace = {
    type: "heatmap", z: cells, colorscale: "YlOrRd", reversescale: true, zmin: 0, zmax,
    x: cells[0].map((_, i) => i), y: cells.map((_, r) => +(r / rows).toFixed(3)),
    hovertemplate: "%{x}s + %{y}s: %{z} samples<extra></extra>",
  };
  const layout = {height: 260, margin: {l: 50, r: 10, t: 10, b: 35},
                  xaxis: {title: {text: "second"}}, yaxis: {title: {text: "offset (s)"}}};
  window.Plotly.newPlot(el, [trace], layout, {displaylogo: false, responsive: true});
  let first = null;
  el.on("plotly_click", (ev) => {
    const p = ev.points[0];
    const t = p.x + p.y;
    if (first === null) {
      first = t;
    } else {
      const [a, b] = first <= t ? [first, t] : [t, first];
      first = null;
      onRange(a, b + 1 / rows);
    }
  });
}
