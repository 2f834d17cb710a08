// Flame graph on a canvas. layout() turns a tree into rectangles (pure, testable); the
// FlameGraph class draws them, answers hover and click, and highlights search matches.
// Names are drawn as canvas text and shown in the tooltip with textContent: never HTML.
"use strict";

import {frameColor, MATCH_COLOR} from "./colors.js";

export const ROW = 18;
const MIN_WIDTH = 0.5; // px: narrower frames are not drawn (the server merged most)

/** A tree sent flat ({nodes}: parents first, `p` the parent's index) as nested nodes
 * with `c` children, in one loop: no stack is too deep for it, as none is for layout. */
export function unflatten(tree) {
  const nodes = tree.nodes;
  for (const n of nodes) n.c = [];
  for (let i = 1; i < nodes.length; i++) nodes[nodes[i].p].c.push(nodes[i]);
  return nodes[0];
}

// Rectangles of the tree scaled to `width`: {x, w, depth, node, up}, depth first so each
// row is sorted by x; `up` is the parent's rectangle (see pathOf). A loop with its own
// stack, not recursion: a deep tree does not overflow the browser's call stack.
export function layout(tree, width) {
  const rects = [];
  const scale = tree.t > 0 ? width / tree.t : 0;
  const todo = [{node: tree, x: 0, depth: 0, up: null}];
  while (todo.length) {
    const r = todo.pop();
    r.w = r.node.t * scale;
    if (r.w < MIN_WIDTH) continue;
    rects.push(r);
    const next = [];
    let cx = r.x;
    for (const child of r.node.c || []) {
      next.push({node: child, x: cx, depth: r.depth + 1, up: r});
      cx += child.t * scale;
    }
    for (let i = next.length - 1; i >= 0; i--) todo.push(next[i]);  // popped in order
  }
  return rects;
}

/** Function ids from the tree's root (excluded) down to the rectangle's frame. */
export function pathOf(rect) {
  const path = [];
  for (let r = rect; r && r.up; r = r.up) if (r.node.f >= 0) path.push(r.node.f);
  return path.reverse();
}

/** `v` as a percentage of `total`, two decimals, as every table and tooltip shows it. */
export function percent(v, total) {
  return total ? (100 * v / total).toFixed(2) : "0.00";
}

/** One frame: its box, and its name when there is room (clipped to the box). */
export function paintFrame(ctx, r, y, color) {
  ctx.fillStyle = color;
  ctx.fillRect(r.x, y, Math.max(r.w - 0.5, 0.5), ROW - 1);
  if (r.w > 28) {
    ctx.fillStyle = "#111";
    ctx.save();
    ctx.beginPath();
    ctx.rect(r.x, y, r.w - 2, ROW - 1);
    ctx.clip();
    ctx.fillText(r.node.n, r.x + 3, y + ROW / 2);
    ctx.restore();
  }
}

export class FlameGraph {
  /** `color(node)` and `describe(node)` (the tooltip's lines, the first in bold) let
   * other graphs (the differential one) reuse drawing, hit testing and tooltips. */
  constructor(canvas, tooltip, {onZoom, onFocus, color, describe} = {}) {
    this.canvas = canvas;
    this.tooltip = tooltip;
    this.onZoom = onZoom || (() => {});
    this.onFocus = onFocus || (() => {});
    this.color = color || frameColor;
    // how a weight reads: samples as they are, time views as ms or s (units.js)
    this.unit = {value: String, suffix: ""};
    this.describe = describe || ((n) => {
      const pct = (v) => percent(v, this.total);
      const w = (v) => `${this.unit.value(v)}${this.unit.suffix}`;
      // the full signature (g) when the name is perf's short one; the class marks it
      const sig = n.g && n.g !== n.n ? [{text: n.g, cls: "signature"}] : [];
      // the source file debug info placed the function in
      const src = n.src ? [{text: n.src, cls: "src"}] : [];
      return [n.n, ...sig, ...src, n.d || "",
              `total ${w(n.t)} (${pct(n.t)}%) · self ${w(n.s)} (${pct(n.s)}%)`];
    });
    this.rects = [];
    this.byDepth = [];
    this.tree = null;
    this.total = 0;
    this.orient = "flame";
    this.search = null;
    this.hover = null;
    this.lastDrawMs = 0;
    canvas.addEventListener("mousemove", (e) => this._move(e));
    canvas.addEventListener("mouseleave", () => this._hideTip());
    canvas.addEventListener("click", (e) => {
      const r = this._hit(e);
      if (r) this.onZoom(r);
    });
    canvas.addEventListener("dblclick", (e) => {
      const r = this._hit(e);
      if (r && r.node.f >= 0) this.onFocus(r.node.f);
    });
    window.addEventListener("resize", () => this.draw());
  }

  setData(tree, total) {
    this.tree = tree;
    this.total = total;
    this.draw();
  }

  setOrientation(orient) {
    this.orient = orient;
    this.draw();
  }

  /** `matcher`: {test(node)} (search.js), or null for no search. */
  setSearch(matcher) {
    this.search = matcher;
    this.draw();
  }

  draw() {
    const t0 = performance.now();
    const canvas = this.canvas;
    const width = canvas.parentElement.clientWidth || 800;
    if (!this.tree) return;
    this.rects = layout(this.tree, width);
    this.byDepth = [];
    for (const r of this.rects) (this.byDepth[r.depth] ||= []).push(r);
    const depth = this.byDepth.length;
    const height = Math.max(depth, 1) * ROW;
    // a canvas past 32,767 device pixels a side (or 2^28 in all) stays blank: a tall
    // tree is drawn at a lower resolution instead
    const dpr = Math.min(window.devicePixelRatio || 1, 32767 / height, 32767 / width,
                         Math.sqrt(2 ** 28 / (width * height)));
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = "12px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    for (const r of this.rects) {
      const hit = this.search && r.node.f >= 0 && this.search.test(r.node);
      paintFrame(ctx, r, this._y(r.depth, depth), hit ? MATCH_COLOR : this.color(r.node));
    }
    this.lastDrawMs = performance.now() - t0;
    return this.lastDrawMs;
  }

  _y(depth, rows) {
    return this.orient === "icicle" ? depth * ROW : (rows - 1 - depth) * ROW;
  }

  _hit(event) {
    const box = this.canvas.getBoundingClientRect();
    const x = event.clientX - box.left;
    const y = event.clientY - box.top;
    const rows = this.byDepth.length;
    const depth = this.orient === "icicle" ? Math.floor(y / ROW) : rows - 1 - Math.floor(y / ROW);
    const row = this.byDepth[depth] || [];
    let lo = 0;
    let hi = row.length - 1;
    while (lo <= hi) { // rects of a row are sorted by x
      const mid = (lo + hi) >> 1;
      const r = row[mid];
      if (x < r.x) hi = mid - 1;
      else if (x >= r.x + r.w) lo = mid + 1;
      else return r;
    }
    return null;
  }

  frameAt(name) {
    return this.rects.find((r) => r.node.n === name) || null;
  }

  centerOf(rect) {
    const rows = this.byDepth.length;
    return {x: rect.x + rect.w / 2, y: this._y(rect.depth, rows) + ROW / 2};
  }

  _move(event) {
    const r = this._hit(event);
    if (!r) return this._hideTip();
    const tip = this.tooltip;
    // a line is text, or {text, cls}; text only ever goes in as textContent
    tip.replaceChildren(...this.describe(r.node).map((line, i) => {
      const el = document.createElement(i ? "div" : "strong");
      const plain = typeof line !== "object" || line === null;
      el.textContent = plain ? String(line) : String(line.text);
      if (!plain && line.cls) el.className = line.cls;
      return el;
    }));
    // fixed to the window, so no box clips it (a short graph, the root row, graphs that
    // share it): right of and below the pointer, or left of / above it near the edges
    tip.hidden = false;
    tip.style.position = "fixed";
    tip.style.left = "0px";
    tip.style.top = "0px";
    const width = tip.offsetWidth;  // long names wrap inside its max-width
    const height = tip.offsetHeight;
    const vw = document.documentElement.clientWidth || window.innerWidth;
    const vh = document.documentElement.clientHeight || window.innerHeight;
    const x = event.clientX + 12 + width <= vw ? event.clientX + 12 :
      Math.max(0, Math.min(event.clientX - 12 - width, vw - width));
    const y = event.clientY + 14 + height <= vh ? event.clientY + 14 :
      Math.max(0, event.clientY - 8 - height);
    tip.style.left = `${x}px`;
    tip.style.top = `${y}px`;
    this.hover = r;
  }

  _hideTip() {
    this.tooltip.hidden = true;
    this.hover = null;
  }
}
