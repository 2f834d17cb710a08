// Call tree tables (top-down from the flame graph's tree, bottom-up from the inverted
// one): expandable rows, sortable self/total columns, a filter, and a link from any row
// to that frame in the flame graph. All text goes in with textContent. As in Firefox
// Profiler's call tree, the first top-down tree opens along its heaviest path; the keyboard
// walks it: arrows move and open or close, `*` opens everything below the selected row,
// Enter shows it in the flame graph.
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
    this.selected = null;  // the row the keyboard is on (its key)
    this._rows = [];  // the rows drawn, in order: {key, node, depth, kids, path}
    this._opened = false;  // the heaviest path was opened (once: the user's choices stay)
    table.addEventListener("keydown", (event) => this._key(event));
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
    // (top-down only: bottom-up, the roots are the sampled functions, a list to read)
    if (!this._opened && tree && !bottomUp) {
      this._opened = true;
      this._openHeaviest();
    }
    this.render();
  }

  /** Open the rows along the heaviest path, each row's heaviest child while it holds a
   * hundredth of the total at least, and select its end. */
  _openHeaviest() {
    let node = this.tree;
    let key = "";
    for (let depth = 0; depth < 1000; depth++) {
      const kids = (node.c || []).filter((c) => c.f >= 0);
      if (!kids.length) break;
      const next = kids.reduce((a, b) => (b.t > a.t ? b : a));
      if (next.t < 0.01 * this.total) break;
      this.open.add(key);
      key = `${key}/${next.f}`;
      node = next;
    }
    this.selected = key;
  }

  /** The keyboard on a row: arrows, `*` and Enter (Firefox Profiler's keys). */
  _key(event) {
    if (event.target.closest("button, input")) return;  // (their own keys)
    const at = this._rows.findIndex((r) => r.key === this.selected);
    if (at < 0) return;
    const row = this._rows[at];
    const select = (key) => { this.selected = key; this.render(true); };
    switch (event.key) {
      case "ArrowDown":
        if (at + 1 < this._rows.length) select(this._rows[at + 1].key);
        break;
      case "ArrowUp":
        if (at > 0) select(this._rows[at - 1].key);
        break;
      case "ArrowRight":
        if (row.kids.length && !this.open.has(row.key)) {
          this.open.add(row.key);
          this.render(true);
        } else if (row.kids.length) {
          select(`${row.key}/${row.kids[0].f}`);
        }
        break;
      case "ArrowLeft":
        if (row.kids.length && this.open.has(row.key)) {
          this.open.delete(row.key);
          this.render(true);
        } else if (row.key) {
          select(row.key.slice(0, row.key.lastIndexOf("/")));
        }
        break;
      case "*": {  // everything below this row
        const todo = [[row.node, row.key]];
        while (todo.length) {
          const [node, key] = todo.pop();
          this.open.add(key);
          for (const c of node.c || []) todo.push([c, `${key}/${c.f}`]);
        }
        this.render(true);
        break;
      }
      case "Enter":
        this.onShow(row.path);
        break;
      default:
        return;
    }
    event.preventDefault();
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

  /** `focus`: the keyboard moved: the selected row takes the focus (and is shown). */
  render(focus = false) {
    const body = this.table.tBodies[0];
    body.replaceChildren();
    this._rows = [];
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
      tr.tabIndex = key === this.selected ? 0 : -1;
      if (key === this.selected) tr.classList.add("selected");
      tr.addEventListener("click", () => {
        this.selected = key;
        for (const other of body.querySelectorAll("tr.selected")) {
          other.classList.remove("selected");
          other.tabIndex = -1;
        }
        tr.classList.add("selected");
        tr.tabIndex = 0;
      });
      this._rows.push({key, node, depth, kids, path});
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
    if (!this._rows.some((r) => r.key === this.selected) && rows.length) {
      this.selected = "";  // (the tree changed under it: the root)
      rows[0].tabIndex = 0;
      rows[0].classList.add("selected");
    }
    const chosen = focus && body.querySelector("tr.selected");
    if (chosen) {
      chosen.focus({preventScroll: true});
      chosen.scrollIntoView({block: "nearest"});
    }
    const marked = this._scroll && body.querySelector("tr.marked");
    if (marked) {
      this._scroll = false;
      marked.scrollIntoView({block: "center"});
    }
  }
}
