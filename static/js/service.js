// A service's history: CPUs busy per capture (by label), and per build the share of the
// top functions and of each finding's rule, so a regression shows at a glance.
"use strict";

import {getJSON} from "./http.js";
import {plotlyText} from "./plotly-text.js";

const box = document.getElementById("history");
const data = await getJSON(box.dataset.url);
box.dataset.points = String(data.points.length);
const config = {displaylogo: false, responsive: true};
// every value axis starts at 0 (a 12% change must not look like a cliff); the legend
// sits below the plot, with room for one row per entry of long names
const LEGEND_ROW = 22;
const layout = (y, entries = 0) => ({
  height: 260 + LEGEND_ROW * entries, margin: {l: 50, r: 10, t: 10, b: 40},
  yaxis: {title: {text: y}, rangemode: "tozero"}, xaxis: {type: "category"},
  legend: {orientation: "h", x: 0, y: -0.2, yanchor: "top"},
});
// a legend entry: long C++ names shortened with an ellipsis, the full name on hover
const NAME_MAX = 70;
const short = (name) => (name.length > NAME_MAX ? name.slice(0, NAME_MAX - 1) + "…" : name);
const labels = [...new Set(data.points.map((p) => p.label))];
// the hover of a point: its rate and CPU per unit of work, and its verdict
function describe(p) {
  const parts = [`capture ${p.capture}`];
  if (p.rate) parts.push(`${p.rate.value.toLocaleString("en-US")} ${p.rate.unit}`);
  if (p.cpu_per_unit != null) {
    parts.push(`${(1000 * p.cpu_per_unit).toPrecision(3)} ms CPU per ${p.unit}`);
  }
  if (p.verdict) parts.push(`${p.verdict} vs previous build`);
  return parts.join(" · ");
}
window.Plotly.newPlot("chart-cpus", labels.map((label) => {
  const pts = data.points.filter((p) => p.label === label);
  return {type: "scatter", mode: "lines+markers", name: plotlyText(label),
          x: pts.map((p) => plotlyText(p.build)), y: pts.map((p) => p.cpus),
          text: pts.map((p) => plotlyText(describe(p))),
          customdata: pts.map((p) => p.capture)};
}), layout("CPUs busy", Math.ceil(labels.length / 4)), config);
// a point opens its capture
document.getElementById("chart-cpus").on("plotly_click", (ev) => {
  const id = ev.points[0] && ev.points[0].customdata;
  if (Number.isInteger(id)) window.location.assign(`/captures/${id}/`);
});
// with rates: the throughput of each capture, its runs' spread as error bars (one
// measurement has none), and CPU per unit of work: what a verdict judges by
const rated = data.points.filter((p) => p.rate);
if (rated.length) {
  document.getElementById("rates").hidden = false;
  const series = [...new Set(rated.map((p) => `${p.label} (${p.rate.unit})`))];
  const of = (name) => rated.filter((p) => `${p.label} (${p.rate.unit})` === name);
  const spread = (values) => {
    if (!values || values.length < 2) return 0;
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    return Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (values.length - 1));
  };
  const trace = (name, y, extra = {}) => {
    const pts = of(name);
    return {type: "scatter", mode: "lines+markers", name: plotlyText(name),
            x: pts.map((p) => plotlyText(p.build)), y: pts.map(y),
            text: pts.map((p) => plotlyText(describe(p))),
            customdata: pts.map((p) => p.capture), ...extra};
  };
  // the noise band of each series (drawn first, under it): what a build's value must
  // leave to be a change (the 95% interval of its runs' mean, or what one run on a
  // shared machine varies by: history.py's bands)
  const band = (name, bounds, scale = 1) => {
    const pts = of(name);
    const edge = (i) => pts.map((p) => (p[bounds] && p[bounds][i] != null
      ? scale * p[bounds][i] : null));
    const base = {type: "scatter", mode: "lines", line: {width: 0}, showlegend: false,
                  hoverinfo: "skip", meta: "band", x: pts.map((p) => plotlyText(p.build))};
    return [{...base, name: plotlyText(`${name} noise (high)`), y: edge(1)},
            {...base, name: plotlyText(`${name} noise (low)`), y: edge(0),
             fill: "tonexty", fillcolor: "rgba(120, 120, 120, 0.18)"}];
  };
  window.Plotly.newPlot("chart-throughput", series.flatMap((name) => [
    ...band(name, "rate_band"),
    trace(name, (p) => p.rate.value,
          {error_y: {type: "data", visible: true,
                     array: of(name).map((p) => spread(p.rate.values))}})]),
  layout("throughput", Math.ceil(series.length / 4)), config);
  window.Plotly.newPlot("chart-per-unit", series.flatMap((name) => [
    ...band(name, "per_unit_band", 1000),
    trace(name, (p) => (p.cpu_per_unit == null ? null : 1000 * p.cpu_per_unit))]),
  layout("ms of CPU per unit", Math.ceil(series.length / 4)), config);
}
const versions = data.builds.map((b) => plotlyText(b.version));
window.Plotly.newPlot("chart-functions", data.top_functions.map((name) => ({
  type: "bar", name: plotlyText(short(name)), x: versions,
  y: data.builds.map((b) => (b.functions || {})[name] || 0),
  // (the name as data, not in the template: a name may hold template syntax)
  customdata: versions.map(() => plotlyText(name)),
  hovertemplate: "%{customdata}<br>%{x}: %{y}%<extra></extra>",
})), {...layout("% of samples", data.top_functions.length), barmode: "group"}, config);
const rules = [...new Set(data.builds.flatMap((b) => Object.keys(b.rules)))];
window.Plotly.newPlot("chart-rules", rules.map((rule) => ({
  type: "bar", name: plotlyText(rule), x: versions,
  y: data.builds.map((b) => b.rules[rule] || 0),
})), {...layout("% of samples", Math.ceil(rules.length / 4)), barmode: "group"}, config);
