// The focused function's hot lines: a table of file:line by self and total weight
// (data/lines.json), and, when the build's source archive has the file, the function's
// source with each line shaded by its self weight. Names, paths and source text come
// from uploaded files: all of it goes in with textContent, never as HTML.
"use strict";

import {percent} from "./flamegraph.js";

export const NO_LINES = "No source lines: upload the debug files (or the binaries built " +
  "with -g) for this build to see where in the function the time goes.";

/** The last part of a path (either separator), or the path when it ends in one. */
export function basename(path) {
  const s = String(path || "");
  const i = Math.max(s.lastIndexOf("/"), s.lastIndexOf("\\"));
  return i >= 0 && i < s.length - 1 ? s.slice(i + 1) : s;
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

export class HotLines {
  /** `box`: the card; it holds #hot-lines-title, #hot-lines-status, #hot-lines (table),
   * #hot-lines-more and #hot-source. */
  constructor(box) {
    this.box = box;
    this.format = String;  // a weight as the cells show it (units.js)
    this.data = null;
  }

  _part(id) {
    return this.box.querySelector(`#${id}`);
  }

  hide() {
    this.box.hidden = true;
    this.data = null;
    this.box.dataset.state = "hidden";
  }

  loading(name) {
    this.box.hidden = false;
    this.box.dataset.state = "loading";
    if (name) this._title(name, "");
    const status = this._part("hot-lines-status");
    status.textContent = "Loading…";
    status.classList.remove("error");
  }

  error(message) {
    this.box.hidden = false;
    this.box.dataset.state = "error";
    const status = this._part("hot-lines-status");
    status.textContent = `The hot lines could not be loaded: ${message}`;
    status.classList.add("error");
    this._part("hot-lines").hidden = true;
    this._part("hot-lines-more").textContent = "";
    this._part("hot-source").replaceChildren();
    this._part("hot-source").hidden = true;
  }

  _title(name, signature) {
    const title = this._part("hot-lines-title");
    title.textContent = name;
    title.title = signature || "";
    const sig = this._part("hot-lines-signature");
    sig.textContent = signature && signature !== name ? signature : "";
  }

  show(data) {
    this.data = data;
    this.box.hidden = false;
    this._title(data.n, data.g);
    const status = this._part("hot-lines-status");
    status.classList.remove("error");
    const table = this._part("hot-lines");
    const body = table.tBodies[0];
    body.replaceChildren();
    const rows = data.lines || [];
    if (!rows.length) {
      status.textContent = NO_LINES;
      table.hidden = true;
    } else {
      status.textContent = "";
      table.hidden = false;
      const w = this.format;
      const pct = (v) => percent(v, data.total);
      for (const r of rows) {
        const tr = document.createElement("tr");
        tr.dataset.file = r.file;
        tr.dataset.line = String(r.line);
        const where = el("td", null, "loc");
        const file = el("span", basename(r.file), "file");
        file.title = r.file;
        where.append(file, el("span", `:${r.line}`, "line"));
        tr.append(where, el("td", w(r.s)), el("td", pct(r.s)), el("td", w(r.t)),
                  el("td", pct(r.t)));
        tr.addEventListener("click", () => this._jump(r));
        body.append(tr);
      }
    }
    this._part("hot-lines-more").textContent = data.more ?
      `and ${data.more} more line${data.more === 1 ? "" : "s"} with fewer samples` : "";
    this._source(data.source, data.source_note);
    this.box.dataset.state = rows.length ? "lines" : "empty";
  }

  /** The function's source around its hot lines, shaded by self weight; else `note`,
   * why the build's source archive gives none (refused, not read yet), when there is. */
  _source(source, note) {
    const box = this._part("hot-source");
    box.replaceChildren();
    if (!source || !Array.isArray(source.rows) || !source.rows.length) {
      box.hidden = !note;
      if (note) box.append(el("p", note, "source-note hint"));
      return;
    }
    box.hidden = false;
    const head = el("p", null, "source-head");
    const file = el("code", source.file);
    head.append(file, document.createTextNode(" from "), el("code", source.archive));
    const max = Math.max(1, ...source.rows.map((r) => r.s || 0));
    const w = this.format;
    const listing = el("div", null, "source-listing");
    listing.setAttribute("role", "table");
    let prev = null;
    for (const r of source.rows) {
      if (prev !== null && r.line > prev + 1) listing.append(el("div", "⋯", "source-gap"));
      prev = r.line;
      const row = el("div", null, "source-row");
      row.dataset.line = String(r.line);
      const heat = (r.s || 0) / max;
      if (r.s > 0) {
        row.classList.add("hot");
        // the hottest line reads darkest; any line that ran is visibly shaded
        row.style.setProperty("--heat", String(0.12 + 0.6 * heat));
      }
      const bar = el("span", null, "source-bar");
      bar.style.width = `${(100 * heat).toFixed(1)}%`;
      const barBox = el("span", null, "source-heat");
      barBox.append(bar);
      barBox.title = r.s || r.t ? `self ${w(r.s || 0)} · total ${w(r.t || 0)}` : "";
      row.append(el("span", r.line, "source-no"), barBox,
                 el("span", r.s ? w(r.s) : "", "source-self"),
                 el("span", r.text, "source-text"));
      listing.append(row);
    }
    box.append(head, listing);
  }

  _jump(r) {
    const listing = this._part("hot-source");
    if (listing.hidden || !this.data || !this.data.source) return;
    if (basename(this.data.source.file) !== basename(r.file)) return;
    const row = listing.querySelector(`.source-row[data-line="${Number(r.line)}"]`);
    if (!row) return;
    for (const o of listing.querySelectorAll(".source-row.picked")) o.classList.remove("picked");
    row.classList.add("picked");
    row.scrollIntoView({block: "nearest"});
  }
}
