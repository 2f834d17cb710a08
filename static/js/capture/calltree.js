// Call tree tables (top-down from the flame graph's tree, bottom-up from the inverted
// one): expandable rows, sortable self/total columns, a filter, and a link from any row
// to that frame in the flame graph. All text goes in with textContent.
"use strict";

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

  setFilter(rx) {
    this.filter = rx;
    this.render();
  }

  _matches(node) {
    if (!this.filter) return true;
    if (node.f >= 0 && this.filter.test(node.n)) return true;
    return (node.c || []).some((c) => this._matches(c));
  }

  render() {
    const body = this.table.tBodies[0];
    body.replaceChildren();
    if (!this.tree) return;
    const pct = (v) => (this.total ? (100 * v / this.total).toFixed(2) : "0.00");
    const rows = [];
    const walk = (node, depth, key, path) => {
      const kids = (node.c || []).filter((c) => this._matches(c))
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
        kids.forEach((c, i) => walk(c, depth + 1, `${key}/${c.f}:${i}`,
                                    c.f >= 0 ? path.concat([c.f]) : path));
      }
    };
    walk(this.tree, 0, "", []);
    body.append(...rows);
  }
}
