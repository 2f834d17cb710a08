// Call tree tables (top-down from the flame graph's tree, bottom-up from the inverted
// one): expandable rows, sortable self/total columns, a filter, and a link from any row
// to that frame in the flame graph. All text goes in with textContent.
"use strict";

import {percent} from "./flamegraph.js";

export class CallTree {
  constructor(table, {onShow} = {}) {
    this.table = table;
    this.onShow = onShow || (() => {});
    this.tree = null;
    this.total = 0;
    this.open = new Set([""]);
    this.sortKey = "t";
    this.filter = null;
    table.querySelectorAll("th[data-sort]").forEach((th) => {
      th.addEventListener("click", () => {
        this.sortKey = th.dataset.sort;
        this.render();
      });
    });
  }

  setData(tree, total) {
    this.tree = tree;
    this.total = total;
    this.render();
  }

  /** `render`: false while the table is hidden (it renders when shown). */
  setFilter(rx, render = true) {
    this.filter = rx;
    if (render) this.render();
  }

  render() {
    const body = this.table.tBodies[0];
    body.replaceChildren();
    if (!this.tree) return;
    const pct = (v) => percent(v, this.total);
    const memo = new Map();  // node -> it or a descendant matches the filter (one pass)
    const matches = (node) => {
      if (!this.filter) return true;
      let m = memo.get(node);
      if (m === undefined) {
        m = (node.f >= 0 && this.filter.test(node.n)) || (node.c || []).some(matches);
        memo.set(node, m);
      }
      return m;
    };
    const rows = [];
    const walk = (node, depth, key, path) => {
      const kids = (node.c || []).filter(matches)
        .sort((a, b) => b[this.sortKey] - a[this.sortKey] || a.n.localeCompare(b.n));
      const tr = document.createElement("tr");
      tr.dataset.key = key;
      const name = document.createElement("td");
      name.className = "fn";
      name.style.paddingLeft = `${0.4 + depth * 1.1}rem`;
      const toggle = document.createElement("button");
      toggle.type = "button";
      toggle.className = "toggle";
      toggle.textContent = kids.length ? (this.open.has(key) ? "▾" : "▸") : "·";
      toggle.disabled = !kids.length;
      toggle.addEventListener("click", () => {
        if (this.open.has(key)) this.open.delete(key); else this.open.add(key);
        this.render();
      });
      const label = document.createElement("span");
      label.textContent = node.n;
      name.append(toggle, label);
      if (node.f >= 0) {
        const show = document.createElement("button");
        show.type = "button";
        show.className = "show-in-flame link";
        show.textContent = "flame graph";
        show.addEventListener("click", () => this.onShow(path));
        name.append(show);
      }
      const cells = [node.s, pct(node.s), node.t, pct(node.t)].map((v) => {
        const td = document.createElement("td");
        td.textContent = String(v);
        return td;
      });
      tr.append(name, ...cells);
      rows.push(tr);
      if (this.open.has(key) || this.filter) {
        // siblings have distinct function ids (one merged "other" at most), so a key
        // stays the same row when the sort or the filter changes
        kids.forEach((c) => walk(c, depth + 1, `${key}/${c.f}`,
                                 c.f >= 0 ? path.concat([c.f]) : path));
      }
    };
    walk(this.tree, 0, "", []);
    body.append(...rows);
  }
}
