// The stack chart: each thread's samples in time order, x time, one lane per thread, the
// root frame at the top of a lane. The server merges what is narrower than a pixel
// (`px`, the seconds one pixel stands for), so a request's boxes follow the pixels
// drawn. The wheel zooms the chart around the pointer (asked again at the finer
// resolution); a drag across it sets the page's time range, which every view follows.
// Names are drawn as canvas text and shown in the tooltip with textContent: never HTML.
"use strict";

import {frameColor} from "./colors.js";
import {getJSON} from "../http.js";
import {sizedContext} from "./canvas.js";

export const ROW = 16;
const LABEL = 18;  // a lane's heading row
const GAP = 6;     // between lanes
const MIN_WIDTH = 0.3;  // px: narrower boxes are not painted
const MERGED = {n: "[merged: frames narrower than a pixel, zoom in]", d: "", k: "merged"};

/** Milliseconds up to 10 s, then seconds. */
function seconds(s) {
  if (Math.abs(s) < 10) return `${(s * 1e3).toFixed(s < 0.01 ? 3 : 1)} ms`;
  return `${s.toFixed(2)} s`;
}

export class StackChart {
  /** `onRange(start, end)`: a drag selected that range (seconds from the first sample). */
  constructor(canvas, tooltip, status, {onRange} = {}) {
    this.canvas = canvas;
    this.tooltip = tooltip;
    this.status = status;
    this.onRange = onRange || (() => {});
    this.data = null;
    this.view = null;    // [start, end] drawn, seconds from the capture's first sample
    this.extent = null;  // how far out it zooms: the page's range, else the samples' span
    this.painted = [];     // what the last draw painted: {x, w, y, lane, depth, f, box}
    this.lanesY = [];      // per lane: {tid, top, bottom}
    this.asked = 0;
    this.drag = null;
    this.timer = null;
    canvas.addEventListener("mousemove", (e) => this._move(e));
    canvas.addEventListener("mouseleave", () => { this.tooltip.hidden = true; });
    canvas.addEventListener("wheel", (e) => this._wheel(e), {passive: false});
    canvas.addEventListener("mousedown", (e) => this._down(e));
    window.addEventListener("mouseup", (e) => this._up(e));
    canvas.addEventListener("dblclick", () => this.reset());
    window.addEventListener("resize", () => this.draw());
  }

  /** Load the chart of `params` (threads, time range: dataParams) over `extent`
   * ([start, end], or null for the span of the samples). */
  async load(url, params, extent) {
    this.url = url;
    this.params = params;
    this.extent = extent;
    this.view = extent ? extent.slice() : null;
    // what was drawn is of the old selection: nothing is read from it (hover, wheel,
    // stackAt) until the new answer is drawn, and data-boxes says when that is
    this.data = null;
    this.painted = [];
    delete this.canvas.dataset.boxes;
    await this._fetch();
  }

  /** Back to the page's whole range. */
  reset() {
    if (!this.data || !this.extent) return;
    this.view = this.extent.slice();
    this._fetch();
  }

  _width() {
    return this.canvas.parentElement.clientWidth || 800;
  }

  async _fetch() {
    const params = new URLSearchParams(this.params);
    const [a, b] = this.view || [0, 0];
    if (b > a) {
      params.set("start", String(a));
      params.set("end", String(b));
      params.set("px", String((b - a) / this._width()));
    }
    const asked = ++this.asked;
    const data = await getJSON(this.url, params);
    if (asked !== this.asked) return;  // a later zoom asked again
    this.data = data;
    if (!(b > a)) this.view = this._span(data);
    if (!this.extent) this.extent = this.view.slice();
    this.draw();
    this.canvas.dataset.boxes = String(data.lanes.reduce((n, l) => n + l.boxes.s.length, 0));
    this.canvas.dataset.px = String(data.px);
  }

  /** The lanes' samples' time span, when the page did not say one. */
  _span(data) {
    let lo = Infinity;
    let hi = -Infinity;
    for (const l of data.lanes) {
      for (let i = 0; i < l.boxes.s.length; i++) {
        lo = Math.min(lo, l.boxes.s[i]);
        hi = Math.max(hi, l.boxes.e[i]);
      }
    }
    return lo < hi ? [lo, hi] : [0, 1];
  }

  _x(t, width) {
    const [a, b] = this.view;
    return (t - a) / (b - a) * width;
  }

  _t(x, width) {
    const [a, b] = this.view;
    return a + x / width * (b - a);
  }

  draw() {
    const data = this.data;
    if (!data || !this.view) return;
    const canvas = this.canvas;
    const width = this._width();
    let height = 0;
    this.lanesY = data.lanes.map((l) => {
      const top = height;
      height += LABEL + Math.max(l.depth, 1) * ROW + GAP;
      return {tid: l.tid, top, bottom: height - GAP};
    });
    height = Math.max(height, ROW);
    const ctx = sizedContext(canvas, width, height);
    this.painted = [];
    data.lanes.forEach((l, li) => {
      const top = this.lanesY[li].top;
      ctx.fillStyle = "#374151";
      ctx.fillText(`${l.comm} ${l.tid} · ${l.samples} samples · ${seconds(l.sampled_s)} on CPU`,
                   2, top + LABEL / 2);
      const b = l.boxes;
      for (let i = 0; i < b.s.length; i++) {
        const x0 = this._x(b.s[i], width);
        const x1 = this._x(b.e[i], width);
        if (x1 < 0 || x0 > width || x1 - x0 < MIN_WIDTH) continue;
        const x = Math.max(x0, 0);
        const w = Math.min(x1, width) - x;
        const y = top + LABEL + b.d[i] * ROW;
        const node = this._node(b.f[i]);
        ctx.fillStyle = frameColor(node);
        ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
        if (w > 28) {
          ctx.fillStyle = "#111";
          ctx.save();
          ctx.beginPath();
          ctx.rect(x, y, w - 2, ROW - 1);
          ctx.clip();
          ctx.fillText(node.n, x + 3, y + ROW / 2);
          ctx.restore();
        }
        this.painted.push({x: x0, w: x1 - x0, y, lane: li, depth: b.d[i], f: b.f[i], i});
      }
    });
    const shown = data.lanes.map((l) => `${l.comm} ${l.tid}`).join(", ");
    const more = data.threads > data.lanes.length ?
      ` (the busiest of ${data.threads} threads: pick threads below to chart others)` : "";
    this.status.textContent = data.lanes.length ?
      `${shown}${more} · ${seconds(this.view[0])} to ${seconds(this.view[1])}` +
      (data.truncated ? " · cut to fit one answer: zoom in to see the rest" : "") :
      "No timestamped samples in this selection.";
  }

  _node(f) {
    return f >= 0 ? (this.data.functions[String(f)] || MERGED) : MERGED;
  }

  /** The names painted over time `t` in thread `tid`'s lane, root first. */
  stackAt(tid, t) {
    const li = this.data && this.view ? this.data.lanes.findIndex((l) => l.tid === tid) : -1;
    if (li < 0) return null;
    const x = this._x(t, this._width());
    return this.painted.filter((r) => r.lane === li && r.x <= x && x < r.x + r.w)
      .sort((a, b) => a.depth - b.depth).map((r) => this._node(r.f).n);
  }

  _hit(e) {
    const box = this.canvas.getBoundingClientRect();
    const x = e.clientX - box.left;
    const y = e.clientY - box.top;
    for (const r of this.painted) {
      if (x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + ROW) return r;
    }
    return null;
  }

  _move(e) {
    if (this.drag) {
      this.drag.x1 = e.clientX - this.canvas.getBoundingClientRect().left;
      this._shade();
      return;
    }
    const r = this._hit(e);
    const tip = this.tooltip;
    if (!r) { tip.hidden = true; return; }
    const l = this.data.lanes[r.lane];
    const node = this._node(r.f);
    const start = l.boxes.s[r.i];
    const end = l.boxes.e[r.i];
    const lines = [node.n, node.d, `${seconds(end - start)} from ${seconds(start)}`,
                   `thread ${l.comm} ${l.tid}, depth ${r.depth}`];
    tip.replaceChildren(...lines.filter(Boolean).map((text, i) => {
      const el = document.createElement(i ? "div" : "strong");
      el.textContent = text;
      return el;
    }));
    // fixed to the window, right of and below the pointer, or left / above at the edges
    tip.hidden = false;
    tip.style.position = "fixed";
    tip.style.left = "0px";
    tip.style.top = "0px";
    const vw = document.documentElement.clientWidth || window.innerWidth;
    const vh = document.documentElement.clientHeight || window.innerHeight;
    const w = tip.offsetWidth;
    const h = tip.offsetHeight;
    const x = e.clientX + 12 + w <= vw ? e.clientX + 12 : Math.max(0, e.clientX - 12 - w);
    const y = e.clientY + 14 + h <= vh ? e.clientY + 14 : Math.max(0, e.clientY - 8 - h);
    tip.style.left = `${x}px`;
    tip.style.top = `${y}px`;
  }

  /** Zoom around the pointer: 15% a notch, no further than 10 µs across and no
   * further out than the page's range (a sideways scroll pans); asked again once the
   * wheel rests. */
  _wheel(e) {
    if (!this.data) return;
    const [a, b] = this.view;
    const [lo, hi] = this.extent;
    const sideways = Math.abs(e.deltaX) > Math.abs(e.deltaY);
    // zoomed all the way out, a wheel down scrolls the page (as over the flame graph):
    // the chart is wide and tall, and the page's cards go on below it
    if (!sideways && e.deltaY > 0 && a <= lo && b >= hi) return;
    e.preventDefault();
    const width = this._width();
    const at = this._t(e.clientX - this.canvas.getBoundingClientRect().left, width);
    let span = b - a;
    let start = a;
    if (sideways) {  // a sideways scroll pans
      start = a + e.deltaX / width * span;
    } else {
      const f = e.deltaY > 0 ? 1.15 : 1 / 1.15;
      span = Math.min(Math.max(span * f, 1e-5), hi - lo);
      start = at - (at - a) * span / (b - a);
    }
    start = Math.min(Math.max(start, lo), hi - span);
    this.view = [start, start + span];
    this.draw();  // the boxes we have, stretched, until the finer ones come
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this._fetch(), 200);
  }

  _down(e) {
    if (e.button !== 0 || !this.data) return;
    const x = e.clientX - this.canvas.getBoundingClientRect().left;
    this.drag = {x0: x, x1: x};
  }

  _up() {
    const d = this.drag;
    this.drag = null;
    if (!d) return;
    this.draw();
    if (Math.abs(d.x1 - d.x0) < 4) return;  // a click, not a drag
    const width = this._width();
    const a = this._t(Math.min(d.x0, d.x1), width);
    const b = this._t(Math.max(d.x0, d.x1), width);
    this.onRange(a, b);
  }

  _shade() {
    this.draw();
    const ctx = this.canvas.getContext("2d");
    const d = this.drag;
    ctx.fillStyle = "rgba(37, 99, 235, 0.18)";
    ctx.fillRect(Math.min(d.x0, d.x1), 0, Math.abs(d.x1 - d.x0),
                 parseFloat(this.canvas.style.height));
  }
}
