// The sandwich view (speedscope's): every function in a table sorted by self, total,
// name or library; the one picked shows its callers above it (a flame graph whose root,
// at the bottom, is the function: each row up is one caller further out) and its
// callees below (an icicle from the function down). The data is the flame graph
// endpoint's focused answer (`callers`, `callees`) and the functions table's, in the
// order the table asks; the pick is the page's `focus`, so it lives in the URL.
// Names go in with textContent only.
"use strict";

import {FlameGraph, percent, unflatten} from "./flamegraph.js";
import {basename} from "./hotlines.js";
import {dataParams} from "./state.js";
import {unitOf} from "./units.js";

/** The table's orders (the functions endpoint's `sort`): numbers descend, text ascends. */
export const SORTS = ["self", "total", "name", "dso"];
const TEXT = ["name", "dso"];  // the orders that ascend
const ROWS = 200;  // rows the table lists (the endpoint's page)

export class SandwichView {
  /** `els`: {panel, table, count, title, callers, callees, tooltip}; `load(params, url)`
   * fetches ({data, error}, main.js's flameData); `onSelect(fid)` picks a function,
   * `onSort(key)` orders the table. */
  constructor(els, {urls, load, onSelect, onSort}) {
    this.els = els;
    this.urls = urls;
    this.load = load;
    this.onSelect = onSelect;
    this.functionsKey = null;
    this.flameKey = null;
    this.asked = 0;
    const pick = (rect) => {
      if (rect.depth > 0 && rect.node.f >= 0) onSelect(rect.node.f);
    };
    // each graph its own tooltip: the flame graph's sits in a panel hidden here
    this.callers = new FlameGraph(els.callers, els.tooltip, {onZoom: pick, onFocus: () => {}});
    this.callees = new FlameGraph(els.callees, els.tooltip, {onZoom: pick, onFocus: () => {}});
    this.callers.orient = "flame";  // the function at the bottom, its callers above
    this.callees.orient = "icicle";  // the function at the top, its callees below
    els.table.querySelectorAll("th[data-sort]").forEach((th) => {
      th.tabIndex = 0;
      const sort = () => onSort(th.dataset.sort);
      th.addEventListener("click", sort);
      th.addEventListener("keydown", (e) => { if (e.key === "Enter") sort(); });
    });
  }

  /** Shows `state` (shown: the view is on screen; a hidden canvas has no width). */
  async refresh(state) {
    if (state.view !== "sandwich") return;
    const asked = ++this.asked;
    const unit = unitOf(state.time);
    this.callers.unit = this.callees.unit = unit;
    const fparams = dataParams(state);
    fparams.set("sort", state.sort);
    const fkey = fparams.toString();
    const gparams = state.focus === null ? null :
      dataParams({...state, root: [], invert: false}, {flame: true});
    const gkey = gparams ? gparams.toString() : "";
    const [table, graphs] = await Promise.all([
      fkey === this.functionsKey ? null : this.load(fparams, this.urls.functions),
      gkey === this.flameKey || !gparams ? null : this.load(gparams, this.urls.flame),
    ]);
    if (asked !== this.asked) return;  // a later change asked again
    if (table) {
      this.functionsKey = fkey;
      this.table = table.data;
    }
    if (graphs) {
      this.flameKey = gkey;
      this.graphs = graphs.data;
    }
    if (!gparams) {
      this.flameKey = "";
      this.graphs = null;
    }
    this._table(state, unit);
    this._graphs(state, unit);
  }

  _table(state, unit) {
    const {table, count} = this.els;
    const data = this.table;
    for (const th of table.querySelectorAll("th[data-sort]")) {
      const on = th.dataset.sort === state.sort;
      th.classList.toggle("sorted", on);
      if (!on) th.removeAttribute("aria-sort");
      else th.setAttribute("aria-sort", TEXT.includes(state.sort) ? "ascending" : "descending");
    }
    const body = table.tBodies[0];
    body.replaceChildren();
    const w = unit.value;
    const pct = (v) => percent(v, data.total);
    for (const f of data.functions.slice(0, ROWS)) {
      const tr = document.createElement("tr");
      tr.className = `kind-${f.k}`;
      tr.dataset.f = String(f.f);
      const selected = f.f === state.focus;
      tr.classList.toggle("selected", selected);
      tr.setAttribute("aria-selected", String(selected));
      for (const [v, cls] of [[w(f.s)], [pct(f.s)], [w(f.t)], [pct(f.t)], [f.n, "fn"],
                              [f.d, "dso"]]) {
        const td = document.createElement("td");
        if (cls) td.className = cls;
        td.textContent = cls === "dso" ? basename(String(v)) : String(v);
        if (cls === "fn") td.title = f.g || String(v);
        if (cls === "dso") td.title = String(v);
        tr.append(td);
      }
      tr.addEventListener("click", () => this.onSelect(f.f));
      body.append(tr);
    }
    const shown = Math.min(ROWS, data.functions.length);
    count.textContent = data.count > shown ?
      `${shown} of ${data.count} functions, by ${state.sort === "dso" ? "library" : state.sort}` :
      `${data.count} functions`;
    table.dataset.sort = state.sort;
    table.dataset.rows = String(shown);
  }

  _graphs(state, unit) {
    const {panel, title} = this.els;
    const data = this.graphs;
    const box = panel.querySelector(".sandwich-graphs");
    if (!data || data.focus === undefined) {
      box.dataset.state = "empty";
      title.textContent = "Pick a function in the table to see its callers and callees.";
      for (const g of box.querySelectorAll(".sandwich-graph")) g.hidden = true;
      delete panel.dataset.function;
      delete panel.dataset.total;
      return;
    }
    const up = unflatten(data.callers);
    const down = unflatten(data.callees);
    for (const g of box.querySelectorAll(".sandwich-graph")) g.hidden = false;
    // each graph spans the function's weight (its frame is the whole width); the
    // tooltips give shares of the selection
    this.callers.setData(up, data.total);
    this.callees.setData(down, data.total);
    const w = (v) => `${unit.value(v)}${unit.suffix}`;
    title.textContent = `${down.n}: total ${w(down.t)} (${percent(down.t, data.total)}%), ` +
      `self ${w(down.s)} (${percent(down.s, data.total)}%)`;
    box.dataset.state = "shown";
    panel.dataset.function = String(data.focus);
    panel.dataset.total = String(down.t);
  }

  /** Redraw at the panel's width (it was hidden). */
  draw() {
    if (this.callers.tree) this.callers.draw();
    if (this.callees.tree) this.callees.draw();
  }
}
