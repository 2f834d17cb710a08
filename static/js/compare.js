// Differential flame graph: widths from both captures together (so what went away is still
// visible), colour from the change of each frame's share of its capture (red grew, blue
// shrank), or absolute samples with the toggle. Drawing and tooltips are FlameGraph's.
"use strict";

import {FlameGraph} from "./capture/flamegraph.js";
import {percentText, points, signedText} from "./numbers.js";

const box = document.getElementById("diff");
const tree = JSON.parse(document.getElementById("diff-tree").textContent);
const scale = Math.max(tree.a, tree.b, 1);  // absolute change, of the larger capture
let absolute = false;

// The tree comes flat ({a, b, nodes}: parents first, `p` the parent's index); it is
// linked in one loop, so any depth fits (a recursive walk would overflow the stack).
function convert() {
  const out = tree.nodes.map((node) => ({
    n: node.n, f: 0, t: absolute ? node.a + node.b : Math.round((node.sa + node.sb) * 5e5),
    d: absolute ? (node.b - node.a) / scale : node.sb - node.sa, src: node, c: []}));
  tree.nodes.forEach((node, i) => { if (i) out[node.p].c.push(out[i]); });
  return out[0];
}

// a change of SATURATE (5 points of share, or 5% of the larger capture's samples) or
// more is the full colour; under a fiftieth of it, grey
const SATURATE = 0.05;

function color(delta) {
  const x = Math.max(-1, Math.min(1, delta / SATURATE));
  if (Math.abs(x) < 0.02) return "hsl(0, 0%, 85%)";
  return x > 0 ? `hsl(0, 80%, ${90 - 40 * x}%)` : `hsl(220, 80%, ${90 + 40 * x}%)`;
}

/** The legend: the colour scale's ends in the unit shown, and what grey means. */
function legend() {
  const end = absolute ? `${Math.round(SATURATE * scale).toLocaleString("en-US")} samples`
    : `${(100 * SATURATE).toFixed(1)} points`;
  const grey = absolute
    ? `${Math.max(1, Math.round(SATURATE * scale / 50)).toLocaleString("en-US")} samples`
    : `${(2 * SATURATE).toFixed(1)} point`;
  document.getElementById("diff-legend-low").textContent = `shrank ${end} or more`;
  document.getElementById("diff-legend-high").textContent = `grew ${end} or more`;
  document.getElementById("diff-legend-note").textContent =
    `(grey: changed less than ${grey}; ${absolute ? "samples of the larger capture"
      : "points of each capture's own samples"})`;
}

const fg = new FlameGraph(document.getElementById("diff-canvas"),
                          document.getElementById("diff-tooltip"), {
  color: (n) => color(n.d),
  // shares as the tables beside it write them (numbers.js), and the change signed
  describe: ({src: s}) => [
    s.n,
    `before ${percentText(s.sa)} (${s.a}) → after ${percentText(s.sb)} (${s.b})`,
    `change ${points(100 * (s.sb - s.sa))} (${signedText(s.b - s.a, 0)} samples)`],
});

// for tests: where a frame is drawn
window.perfweb = {frameCenter: (name) => {
  const r = fg.frameAt(name);
  return r ? {...fg.centerOf(r), src: r.node.src} : null;
}};

function show() {
  legend();
  fg.setData(convert(), 0);
  box.dataset.frames = String(fg.rects.length);
}

document.getElementById("diff-absolute").addEventListener("click", (e) => {
  absolute = !absolute;
  e.target.textContent = absolute ? "Shares of each capture" : "Absolute samples";
  show();
});
show();
