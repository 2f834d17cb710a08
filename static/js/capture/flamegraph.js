// Flame graph on a canvas. layout() turns a tree into rectangles (pure, testable); the
// FlameGraph class draws them, answers hover and click, zooms and pans its viewport with
// the wheel and a drag, moves a selected frame with the keyboard, and dims what a
// search does not match. Names are drawn as canvas text and shown in the tooltip with
// textContent: never HTML.
"use strict";

import {frameColor, MATCH_COLOR} from "./colors.js";
import {fitLabel} from "./labels.js";
import {sizedContext} from "./canvas.js";
import {FULL, isFull, panView, showSpan, zoomView} from "./flameview.js";

export const ROW = 18;
const MIN_WIDTH = 0.5; // px: narrower frames are not drawn (the server merged most)
const DIM_ALPHA = 0.25; // frames a search does not match
const DRAG_PX = 4; // a press that moves less is a click

/** A tree sent flat ({nodes}: parents first, `p` the parent's index) as nested nodes
 * with `c` children, in one loop: no stack is too deep for it, as none is for layout. */
export function unflatten(tree) {
  const nodes = tree.nodes;
  for (const n of nodes) n.c = [];
  for (let i = 1; i < nodes.length; i++) nodes[nodes[i].p].c.push(nodes[i]);
  return nodes[0];
}

// Rectangles of the tree scaled to `width`: {x, w, depth, node, up}, depth first so each
// row is sorted by x; `up` is the parent's rectangle (see pathOf). `view` (flameview.js)
// is the part of the root's width on screen: x is from the viewport's left edge, frames
// wholly outside it are left out (their descendants with them), frames across its edges
// kept whole (drawn clipped), so the ancestors of a zoomed range stay drawn. A loop with
// its own stack, not recursion: a deep tree does not overflow the browser's call stack.
export function layout(tree, width, view = FULL) {
  const rects = [];
  const span = view.end - view.start;
  const scale = tree.t > 0 && span > 0 ? width / (tree.t * span) : 0;
  const todo = [{node: tree, x: -view.start * tree.t * scale, depth: 0, up: null}];
  while (todo.length) {
    const r = todo.pop();
    r.w = r.node.t * scale;
    if (r.w < MIN_WIDTH || r.x >= width || r.x + r.w <= 0) continue;
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

/** One frame: its box, clipped to the viewport (0..`width`), and its name fitted to the
 * part on screen (labels.js), which the rectangle keeps (r.label, r.room). */
export function paintFrame(ctx, r, y, color, width = Infinity) {
  const left = Math.max(r.x, 0);
  const right = Math.min(r.x + r.w, width);
  const gap = right < r.x + r.w ? 0 : 0.5;  // between neighbours, not at the edge
  ctx.fillStyle = color;
  ctx.fillRect(left, y, Math.max(right - left - gap, 0.5), ROW - 1);
  r.label = "";
  r.room = right - left - 5;  // 3 px before the text, 2 after
  if (right - left > 28) {
    // the whole name's width is kept with the node (one font for every graph)
    const measure = (s) => (s === r.node.n ? (r.node.tw ??= ctx.measureText(s).width) :
      ctx.measureText(s).width);
    r.label = fitLabel(measure, r.node.n, r.room);
    if (r.label) {
      ctx.fillStyle = "#111";
      ctx.fillText(r.label, left + 3, y + ROW / 2);
    }
  }
}

export class FlameGraph {
  /** `color(node)` and `describe(node)` (the tooltip's lines, the first in bold) let
   * other graphs (the differential one) reuse drawing, hit testing and tooltips;
   * `onMenu(rect, event)`, when given, opens a menu on a right click instead of the
   * browser's; `onView(view)` hears the viewport move on the page (wheel, drag, the
   * keyboard), not a new tree's whole view. */
  constructor(canvas, tooltip, {onZoom, onFocus, onMenu, onView, color, describe} = {}) {
    this.canvas = canvas;
    this.tooltip = tooltip;
    this.onZoom = onZoom || (() => {});
    this.onFocus = onFocus || (() => {});
    this.onView = onView || (() => {});
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
    this.view = FULL;  // the part of the root's width on screen (flameview.js)
    this.rows = 1;  // the tree's depth: the canvas keeps its height through wheel zooms
    this.width = 800;
    this.selected = null;  // the node the arrow keys move, outlined
    this.parents = new Map();  // node -> parent, for the keyboard
    this.starts = new Map();  // node -> where it starts, a fraction of the root's width
    this._drag = null;
    this._dragged = false;
    this._frame = 0;
    canvas.addEventListener("mousemove", (e) => this._move(e));
    canvas.addEventListener("mouseleave", () => this._hideTip());
    canvas.addEventListener("click", (e) => {
      if (this._dragged) return;  // the end of a drag, not a click
      const r = this._hit(e);
      if (r) this.onZoom(r);
    });
    canvas.addEventListener("dblclick", (e) => {
      if (this._dragged) return;
      const r = this._hit(e);
      if (r && r.node.f >= 0) this.onFocus(r.node.f);
    });
    canvas.addEventListener("wheel", (e) => this._wheel(e), {passive: false});
    canvas.addEventListener("mousedown", (e) => {
      if (e.button !== 0 || !this.tree) return;
      this._drag = {x: e.clientX, y: e.clientY, view: this.view, moved: false};
    });
    window.addEventListener("mousemove", (e) => this._dragTo(e));
    window.addEventListener("mouseup", () => {
      if (!this._drag) return;
      const moved = this._drag.moved;
      this._drag = null;
      this.canvas.classList.remove("dragging");
      if (!moved) return;
      // the click (and a double click's) that follows this mouseup is the drag's end
      this._dragged = true;
      setTimeout(() => { this._dragged = false; }, 0);
    });
    if (onMenu) {
      canvas.addEventListener("contextmenu", (e) => {
        const r = this._hit(e);
        if (!r) return;
        e.preventDefault();
        this._hideTip();
        this.select(r.node);
        onMenu(r, e);
      });
    }
    canvas.addEventListener("keydown", (e) => this._key(e));
    canvas.addEventListener("focus", () => {  // tabbed to (a click selects nothing)
      if (!this.selected && this.tree && canvas.matches(":focus-visible")) {
        this.select(this.tree);
      }
    });
    window.addEventListener("resize", () => this.draw());
  }

  /** A new tree shows whole. A selection moves to its root (Enter zoomed there). */
  setData(tree, total) {
    const hadSelection = this.selected !== null;
    this.tree = tree;
    this.total = total;
    this.view = FULL;
    this._index(tree);
    this.selected = hadSelection ? tree : null;
    this.draw();
  }

  /** Each node's parent and start (a fraction of the root's width), and the depth. */
  _index(tree) {
    this.parents = new Map();
    this.starts = new Map([[tree, 0]]);
    let rows = 1;
    const todo = [[tree, 0]];
    while (todo.length) {
      const [node, depth] = todo.pop();
      rows = Math.max(rows, depth + 1);
      let at = this.starts.get(node);
      for (const c of node.c || []) {
        this.parents.set(c, node);
        this.starts.set(c, at);
        at += tree.t > 0 ? c.t / tree.t : 0;
        if (c.t > 0) todo.push([c, depth + 1]);
      }
    }
    this.rows = rows;
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

  /** Whether a search is on and `node` is one of its matches (drawn in MATCH_COLOR;
   * every other frame is dimmed while a search is on). */
  matches(node) {
    return Boolean(this.search && node.f >= 0 && this.search.test(node));
  }

  /** The viewport moved (wheel, drag, keyboard): drawn at the next frame, once. */
  setView(view) {
    this.view = view;
    this.onView(view);
    if (!this._frame) {
      this._frame = requestAnimationFrame(() => {
        this._frame = 0;
        this.draw();
      });
    }
  }

  /** A redraw still waiting for its animation frame, done now (for hit tests). */
  flush() {
    if (!this._frame) return;
    cancelAnimationFrame(this._frame);
    this._frame = 0;
    this.draw();
  }

  /** The narrowest view: half a unit (a sample, a microsecond) across the canvas. */
  _minSpan() {
    return Math.max(1e-12, 0.5 / Math.max(this.tree ? this.tree.t : 1, 1));
  }

  /** The wheel zooms about the pointer (a pinch, ctrl + wheel, faster); a sideways
   * scroll or shift + wheel pans. Zoomed all the way out, a wheel down scrolls the
   * page as it would anywhere else. */
  _wheel(e) {
    if (!this.tree) return;
    const box = this.canvas.getBoundingClientRect();
    const unit = e.deltaMode === 1 ? ROW : e.deltaMode === 2 ? box.width : 1;
    let dx = e.deltaX * unit;
    let dy = e.deltaY * unit;
    if (e.shiftKey && !dx) [dx, dy] = [dy, 0];
    if (Math.abs(dx) > Math.abs(dy)) {
      e.preventDefault();
      this.setView(panView(this.view, dx / box.width));
      return;
    }
    if (!dy || (dy > 0 && isFull(this.view))) return;
    e.preventDefault();
    const at = Math.min(1, Math.max(0, (e.clientX - box.left) / box.width));
    const factor = Math.exp(Math.max(-1, Math.min(1, dy * (e.ctrlKey ? 0.01 : 0.002))));
    this.setView(zoomView(this.view, factor, at, this._minSpan()));
  }

  /** A press that moves DRAG_PX or more pans the view with the pointer. */
  _dragTo(e) {
    const d = this._drag;
    if (!d) return;
    const dx = e.clientX - d.x;
    if (!d.moved && Math.abs(dx) + Math.abs(e.clientY - d.y) < DRAG_PX) return;
    d.moved = true;
    this.canvas.classList.add("dragging");
    this._hideTip();
    this.setView(panView(d.view, -dx / (this.width || 1)));
  }

  /** Arrows move the selection the way they point on screen: toward the root or the
   * heaviest child (which is up depends on the orientation), left and right to the
   * siblings drawn; Enter zooms to it. */
  _key(e) {
    if (!this.tree || e.altKey || e.ctrlKey || e.metaKey) return;
    const node = this.selected;
    if (e.key === "Enter") {
      if (!node) return;
      e.preventDefault();
      this.onZoom(this.rectOf(node));
      return;
    }
    const towardRoot = this.orient === "icicle" ? "ArrowUp" : "ArrowDown";
    const towardLeaf = this.orient === "icicle" ? "ArrowDown" : "ArrowUp";
    if (!["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"].includes(e.key)) return;
    e.preventDefault();
    if (!node) { this.select(this.tree); return; }
    let next = null;
    if (e.key === towardRoot) {
      next = this.parents.get(node) || null;
    } else if (e.key === towardLeaf) {
      for (const c of node.c || []) if (c.t > 0 && (!next || c.t > next.t)) next = c;
    } else {
      const parent = this.parents.get(node);
      const kids = parent ? parent.c : [];
      const step = e.key === "ArrowLeft" ? -1 : 1;
      // the next sibling wide enough to be drawn at this zoom
      const px = this.width / Math.max(this.tree.t * (this.view.end - this.view.start), 1e-12);
      for (let i = kids.indexOf(node) + step; i >= 0 && i < kids.length; i += step) {
        if (kids[i].t * px >= MIN_WIDTH) { next = kids[i]; break; }
      }
    }
    if (next) this.select(next);
  }

  /** Select `node` (null: none), bringing it on screen. */
  select(node) {
    this.selected = node;
    if (node && this.tree && this.tree.t > 0) {
      const a = this.starts.get(node) ?? 0;
      const view = showSpan(this.view, a, a + node.t / this.tree.t);
      if (view !== this.view) {
        this.view = view;
        this.onView(view);
      }
    }
    this.draw();
  }

  /** A rectangle for `node` with its chain of parents (`up`), drawn or not: what
   * onZoom and pathOf take. */
  rectOf(node) {
    const chain = [];
    for (let n = node; n; n = this.parents.get(n)) chain.push(n);
    let up = null;
    chain.reverse().forEach((n, depth) => { up = {node: n, depth, up}; });
    return this.rects.find((r) => r.node === node) || up;
  }

  draw() {
    const t0 = performance.now();
    const canvas = this.canvas;
    const width = canvas.parentElement.clientWidth || 800;
    if (!this.tree) return;
    this.width = width;
    this.rects = layout(this.tree, width, this.view);
    this.byDepth = [];
    for (const r of this.rects) (this.byDepth[r.depth] ||= []).push(r);
    const depth = this.rows;
    const height = Math.max(depth, 1) * ROW;
    const ctx = sizedContext(canvas, width, height);
    let picked = null;
    for (const r of this.rects) {
      // a search dims every frame it does not match (speedscope's and Firefox's way)
      r.dim = Boolean(this.search) && !this.matches(r.node);
      ctx.globalAlpha = r.dim ? DIM_ALPHA : 1;
      paintFrame(ctx, r, this._y(r.depth, depth), r.dim || !this.search ?
        this.color(r.node) : MATCH_COLOR, width);
      if (r.node === this.selected) picked = r;
    }
    ctx.globalAlpha = 1;
    if (picked) {  // the keyboard's frame: a dark outline inside its box, on screen
      const left = Math.max(picked.x, 0);
      const right = Math.min(picked.x + picked.w, width);
      ctx.strokeStyle = "#111";
      ctx.lineWidth = 2;
      ctx.strokeRect(left + 1, this._y(picked.depth, depth) + 1,
                     Math.max(right - left - 2, 1), ROW - 3);
    }
    this.lastDrawMs = performance.now() - t0;
    return this.lastDrawMs;
  }

  _y(depth, rows) {
    return this.orient === "icicle" ? depth * ROW : (rows - 1 - depth) * ROW;
  }

  _hit(event) {
    const box = this.canvas.getBoundingClientRect();
    return this.hitAt(event.clientX - box.left, event.clientY - box.top);
  }

  /** The rectangle drawn at (x, y), px from the canvas's top left corner. */
  hitAt(x, y) {
    if (x < 0 || x >= this.width) return null;  // (frames across the edges are clipped)
    const rows = this.rows;
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

  /** The middle of the part of `rect` on screen. */
  centerOf(rect) {
    const left = Math.max(rect.x, 0);
    const right = Math.min(rect.x + rect.w, this.width);
    return {x: (left + right) / 2, y: this._y(rect.depth, this.rows) + ROW / 2};
  }

  _move(event) {
    if (this._drag && this._drag.moved) return;
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
