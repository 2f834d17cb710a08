// Frame colours: a hue range per kind of code, a stable shade per function name.
"use strict";

const RANGES = {
  user: [15, 45], kernel: [200, 230], jit: [95, 140], vdso: [265, 290],
  unresolved: [0, 0], unknown: [0, 0], merged: [0, 0], root: [0, 0],
};
// the lightest shade's floor per kind, so the frames' dark labels (#111) keep a WCAG
// contrast of 4.5:1 at every hue of the range (blue and violet need lighter shades: at
// 52% lightness a kernel blue gave 2.8:1)
const LIGHT_FLOOR = {user: 52, kernel: 64, jit: 52, vdso: 64};

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
  const light = LIGHT_FLOOR[kind] + ((h >>> 10) % 16);
  return `hsl(${hue.toFixed(1)}, 75%, ${light}%)`;
}

export const MATCH_COLOR = "hsl(300, 85%, 55%)";
