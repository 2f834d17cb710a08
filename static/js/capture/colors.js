// Frame colours: a hue range per kind of code, a stable shade per function name.
"use strict";

const RANGES = {
  user: [15, 45], kernel: [200, 230], jit: [95, 140], vdso: [265, 290],
  unresolved: [0, 0], unknown: [0, 0], merged: [0, 0], root: [0, 0],
};

export function hash(text) {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}

export function frameColor(node) {
  const kind = node.k in RANGES ? node.k : "user";
  if (kind === "unresolved" || kind === "unknown") return "hsl(0, 0%, 72%)";
  if (kind === "merged") return "hsl(0, 0%, 86%)";
  if (kind === "root") return "hsl(220, 10%, 55%)";
  const [lo, hi] = RANGES[kind];
  const h = hash(node.n);
  const hue = lo + (h % 1000) / 1000 * (hi - lo);
  const light = 52 + ((h >>> 10) % 16);
  return `hsl(${hue.toFixed(1)}, 75%, ${light}%)`;
}

export const MATCH_COLOR = "hsl(300, 85%, 55%)";
