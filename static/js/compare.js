// Differential flame graph: widths from both captures together (so what went away is still
// visible), colour from the change of each frame's share of its capture (red grew, blue
// shrank), or absolute samples with the toggle.
"use strict";

import {layout, paintFrame, ROW} from "./capture/flamegraph.js";

const box = document.getElementById("diff");
const canvas = document.getElementById("diff-canvas");
const tip = document.getElementById("diff-tooltip");
const data = {tree: JSON.parse(document.getElementById("diff-tree").textContent)};
let absolute = false;
const scale = Math.max(data.tree.a, data.tree.b, 1);  // absolute change, of the larger capture
let rects = [];

function convert(node) {
  return {n: node.n, f: 0, t: absolute ? node.a + node.b : Math.round((node.sa + node.sb) * 5e5),
          d: absolute ? (node.b - node.a) / scale : node.sb - node.sa, src: node, c: (node.c || []).map(convert)};
}

function color(delta) {
  const x = Math.max(-1, Math.min(1, delta * 20));
  if (Math.abs(x) < 0.02) return "hsl(0, 0%, 85%)";
  return x > 0 ? `hsl(0, 80%, ${90 - 40 * x}%)` : `hsl(220, 80%, ${90 + 40 * x}%)`;
}

function draw() {
  const width = box.clientWidth || 900;
  rects = layout(convert(data.tree), width);
  const depth = Math.max(0, ...rects.map((r) => r.depth)) + 1;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = width * dpr;
  canvas.height = depth * ROW * dpr;
  canvas.style.width = `${width}px`;
  canvas.style.height = `${depth * ROW}px`;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.font = "12px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  for (const r of rects) {
    const y = (depth - 1 - r.depth) * ROW;
    r.y = y;
    paintFrame(ctx, r, y, color(r.node.d));
  }
  box.dataset.frames = String(rects.length);
}

canvas.addEventListener("mousemove", (e) => {
  const b = canvas.getBoundingClientRect();
  const x = e.clientX - b.left;
  const y = e.clientY - b.top;
  const r = rects.find((q) => x >= q.x && x < q.x + q.w && y >= q.y && y < q.y + ROW);
  if (!r) { tip.hidden = true; return; }
  const s = r.node.src;
  tip.replaceChildren();
  const name = document.createElement("strong");
  name.textContent = s.n;
  const nums = document.createElement("div");
  nums.textContent = `before ${(100 * s.sa).toFixed(2)}% (${s.a}) → after ` +
    `${(100 * s.sb).toFixed(2)}% (${s.b})`;
  tip.append(name, nums);
  tip.hidden = false;
  tip.style.left = `${Math.min(x + 12, b.width - 320)}px`;
  tip.style.top = `${y + 14}px`;
});
canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
document.getElementById("diff-absolute").addEventListener("click", (e) => {
  absolute = !absolute;
  e.target.textContent = absolute ? "Shares of each capture" : "Absolute samples";
  draw();
});
window.addEventListener("resize", draw);
draw();
