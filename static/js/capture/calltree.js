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
    this.format = String;  // a weight as the cells show it (units.js)
    this.marked = null;  // the row a frame's "Show in call tree" opened the tree to
    this._scroll = false;
    table.querySelectorAll("th[data-sort]").forEach((th) => {
      th.addEventListener("click", () => {
        this.sortKey = th.dataset.sort;
        this.render();
      });
    });
  }

  /** `bottomUp`: the tree is the inverted one, whose roots are the sampled functions. */
  setData(tree, total, bottomUp = false) {
    this.tree = tree;
    this.total = total;
    this.bottomUp = bottomUp;
    this.render();
  }

  /** A row's self weight. Bottom-up, a root's samples are all its own (its total: the
   * inverted tree counts them at the other end of the path) and a caller's are none. */
  _self(node, depth) {
    if (!this.bottomUp) return node.s;
    return depth === 1 ? node.t : 0;
  }

  /** Open the tree down to `path` (function ids from the root) and mark that row; it
   * is scrolled to when next rendered (the data may still be on its way). */
  reveal(path) {
    let key = "";
    this.open.add(key);
    for (const f of path.slice(0, -1)) {
      key = `${key}/${f}`;
      this.open.add(key);
    }
    this.marked = path.length ? `${key}/${path[path.length - 1]}` : "";
    this._scroll = true;
    if (this.tree) this.render();
  }

  /** `matcher`: {test(node)} (search.js) or null; `render`: false while the table is
   * hidden (it renders when shown). */
  setFilter(matcher, render = true) {
    this.filter = matcher;
    if (render) this.render();
  }

  /** node -> it or a descendant matches the filter, children before parents: one loop,
   * however deep the tree. */
  _matching() {
    const order = [this.tree];
    for (let i = 0; i < order.length; i++) for (const c of order[i].c || []) order.push(c);
    const memo = new Map();
    for (let i = order.length - 1; i >= 0; i--) {
      const node = order[i];
      memo.set(node, (node.f >= 0 && this.filter.test(node)) ||
                     (node.c || []).some((c) => memo.get(c)));
    }
    return memo;
  }

  render() {
    const body = this.table.tBodies[0];
    body.replaceChildren();
    if (!this.tree) return;
    const pct = (v) => percent(v, this.total);
    const memo = this.filter ? this._matching() : null;
    const matches = (node) => !memo || memo.get(node);
    const rows = [];
    const todo = [{node: this.tree, depth: 0, key: "", path: []}];
    while (todo.length) {
      const {node, depth, key, path} = todo.pop();
      const key_ = this.sortKey === "s" ? (n) => this._self(n, depth + 1) : (n) => n.t;
      const kids = (node.c || []).filter(matches)
        .sort((a, b) => key_(b) - key_(a) || b.t - a.t || a.n.localeCompare(b.n));
      const tr = document.createElement("tr");
      tr.dataset.key = key;
      if (key === this.marked) tr.classList.add("marked");
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
      // the full signature beside the short name, and the source file when known
      if (node.g || node.src) label.title = [node.g, node.src].filter(Boolean).join("\n");
      name.append(toggle, label);
      if (node.f >= 0) {
        const show = document.createElement("button");
        show.type = "button";
        show.className = "show-in-flame link";
        show.textContent = "flame graph";
        show.addEventListener("click", () => this.onShow(path));
        name.append(show);
      }
      const f = this.format;
      const own = this._self(node, depth);
      const cells = [f(own), pct(own), f(node.t), pct(node.t)].map((v) => {
        const td = document.createElement("td");
        td.textContent = String(v);
        return td;
      });
      tr.append(name, ...cells);
      rows.push(tr);
      if (this.open.has(key) || this.filter) {
        // siblings have distinct function ids (one merged "other" at most), so a key
        // stays the same row when the sort or the filter changes; pushed last to first,
        // so they come out in order (a loop, not recursion: any depth fits)
        for (let i = kids.length - 1; i >= 0; i--) {
          const c = kids[i];
          todo.push({node: c, depth: depth + 1, key: `${key}/${c.f}`,
                     path: c.f >= 0 ? path.concat([c.f]) : path});
        }
      }
    }
    body.append(...rows);
    const marked = this._scroll && body.querySelector("tr.marked");
    if (marked) {
      this._scroll = false;
      marked.scrollIntoView({block: "center"});
    }
  }
}
