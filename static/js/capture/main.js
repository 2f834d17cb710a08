// The capture explorer: flame graph, call trees, top functions, threads and timeline,
// all driven by one state that lives in the URL.
"use strict";

import {dataParams, readState, writeState} from "./state.js";
import {FlameGraph, pathOf, percent, unflatten} from "./flamegraph.js";
import {isFull} from "./flameview.js";
import {getJSON} from "../http.js";
import {CallTree} from "./calltree.js";
import {serverMatcher, textMatcher} from "./search.js";
import {drawHeatmap, drawTimeline, loadPlotly} from "./timeline.js";
import {drawStates} from "./states.js";
import {unitOf} from "./units.js";
import {basename, HotLines} from "./hotlines.js";
import {SandwichView} from "./sandwich.js";
import {menuItems, TransformBar, without} from "./transforms.js";
import {StackChart} from "./stackchart.js";
import {EventPicker, eventParams} from "./eventpicker.js";
import {copyText, FrameMenu} from "./framemenu.js";

const $ = (id) => document.getElementById(id);
const root = $("explorer");
const urls = {
  flame: root.dataset.flameUrl, functions: root.dataset.functionsUrl,
  threads: root.dataset.threadsUrl, timeline: root.dataset.timelineUrl,
  states: root.dataset.statesUrl, lines: root.dataset.linesUrl,
  stacks: root.dataset.stacksUrl,
};
// the off-CPU and wall-clock views need the capture's context switches
const switches = root.dataset.switches === "1";
const state = readState();
const perf = (window.perfweb = {ready: false, draws: []});

const fg = new FlameGraph($("flame-canvas"), $("flame-tooltip"), {
  onZoom: (rect) => {
    if (rect.node.f < 0) {
      if (rect.depth === 0 && state.root.length) state.root = state.root.slice(0, -1);
      else return;
    } else {
      state.root = state.root.concat(pathOf(rect));
    }
    // (in the focused view `root` is the path below the focused function: zooming
    // stays in that view)
    changed({flame: true});
  },
  onFocus: (fid) => {
    state.focus = fid;
    state.root = [];
    changed({flame: true});
  },
  onMenu: (rect, event) => frameMenu(rect, event),
  onView: () => showSelection(),
});
const callers = new FlameGraph($("callers-canvas"), $("flame-tooltip"), {
  onFocus: (fid) => { state.focus = fid; changed({flame: true}); },
});
const tree = new CallTree($("calltree"), {
  onShow: (path) => {
    state.invert = state.view === "bottomup";  // bottom-up paths live in the inverted tree
    state.view = "flame";
    state.root = path;
    state.focus = null;
    changed({flame: true, view: true});
  },
});

const hot = new HotLines($("hot-lines-box"));
// another event's samples: every view again (the flame graph, trees, tables, charts)
const events = new EventPicker($("event-picker"), state, {
  onPick: () => { changed({filters: true}); eventViews(); },
  onBack: () => { refreshFunctions(); refreshStacks(); eventViews(); },  // (restore: the rest)
});

function eventViews() {
  loadThreads();
  if (window.Plotly) loadTimeline();  // drawn already: again, else when it is shown
}
// the sandwich view's pick is the page's focus (hot lines follow it too)
const sandwich = new SandwichView({
  panel: $("sandwich-panel"), table: $("sandwich-functions"), count: $("sandwich-count"),
  title: $("sandwich-title"), callers: $("sandwich-callers"), callees: $("sandwich-callees"),
  tooltip: $("sandwich-tooltip"),
}, {
  urls, load: (params, url) => flameData(params, url),
  onSelect: (fid) => { state.focus = fid; state.root = []; changed({flame: true}); },
  onSort: (key) => { state.sort = key; changed({}); },
});

// Call-tree transforms: every view is of the stacks after them (the server applies them)
const transformBar = new TransformBar($("transforms"), {
  apply: (kind, fid) => applyTransform(kind, fid),
  remove: (i) => {
    // a collapsed library's frame (a focus on it) goes with its collapse
    if (state.transforms[i].startsWith("cr-")) state.focus = null;
    state.transforms = without(state.transforms, i);
    state.root = [];
    changed({filters: true});
  },
});

function applyTransform(kind, fid) {
  const t = `${kind}-${fid}`;
  if (state.transforms[state.transforms.length - 1] === t) return;
  state.transforms = state.transforms.concat([t]);
  if (kind !== "rec") state.focus = null;  // the function leaves the stacks
  state.root = [];  // (a zoom's path may no longer be)
  changed({filters: true});
}

function changed(what) {
  writeState(state, {push: true});  // Back returns to the view before this change
  showToggles();
  if (what.view) showView();
  if (what.time) showTime();
  if (what.flame) refreshFlame();
  if (what.filters) {
    refreshFlame();
    refreshTree();
    refreshFunctions();
    refreshStacks();
  }
  refreshLines();  // asks again only when the focus or the selection changed
  sandwich.refresh(state);  // (when it is the view shown)
}

/** The weights' unit everywhere: samples, or time in ms/s in the off-CPU and wall views. */
function showTime() {
  for (const b of document.querySelectorAll("#time-tabs button")) {
    b.classList.toggle("active", b.dataset.time === state.time);
  }
  const unit = unitOf(state.time);
  fg.unit = callers.unit = unit;
  tree.format = hot.format = unit.value;
  $("selection-unit").textContent = unit.label;
  root.dataset.time = state.time;
  events.show();
}

function showView() {
  for (const b of document.querySelectorAll("#view-tabs button")) {
    b.classList.toggle("active", b.dataset.view === state.view);
  }
  const sandwiched = state.view === "sandwich";
  $("flame-panel").hidden = state.view !== "flame";
  $("tree-panel").hidden = state.view === "flame" || sandwiched;
  $("sandwich-panel").hidden = !sandwiched;
  if (sandwiched) sandwich.refresh(state);
  else if (state.view !== "flame") refreshTree();
  else fg.draw();  // drawn while hidden, it took a fallback width
}

/** "all", then the frames down to the zoomed one; `focused`: path[0] is the focused
 * function, and its crumb and those below stay in the focused view. */
function breadcrumbs(path, focused = false) {
  const box = $("breadcrumbs");
  box.replaceChildren();
  const crumb = (label, go) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "crumb";
    b.textContent = label;
    b.addEventListener("click", () => { go(); changed({flame: true}); });
    box.append(b);
  };
  crumb("all", () => { state.root = []; state.focus = null; });
  path.forEach((p, i) => crumb(p.n, () => {
    state.root = state.root.slice(0, focused ? i : i + 1);
  }));
}

// The call tree's filter: the last text typed in the search box or the tree's own filter.
let treeFilter = state.search;

/** The flame data (or `url`'s) for `params`; what the server refuses (400) is dropped,
 * the data fetched without it, and its message returned to be shown: an off-CPU view
 * of a capture without context switches (a link from elsewhere), then a search (too
 * long, a regular expression it cannot run). */
async function flameData(params, url = urls.flame) {
  try {
    return {data: await getJSON(url, params), error: null};
  } catch (e) {
    if (e.status !== 400) throw e;
    if (params.has("view") && !switches) {
      params.delete("view");
      state.time = "on-cpu";
      writeState(state);
      showTime();
    } else if (params.has("tf") && /^(Transform|At most)/.test(e.message)) {
      params.delete("tf");  // a link's transforms this capture does not have
      state.transforms = [];
      writeState(state);
    } else if (params.has("search")) {
      params.delete("search");
    } else {
      throw e;
    }
    const again = await flameData(params, url);
    return {data: again.data, error: again.error || e.message};
  }
}

function showShare(search, error) {
  const el = $("flame-share");
  el.classList.toggle("error", Boolean(error));
  if (error) { el.textContent = error; return; }
  if (!search) { el.textContent = ""; return; }
  const unit = unitOf(state.time);
  el.textContent = `“${search.pattern}” matches ${unit.value(search.samples)} ${unit.label} ` +
    `(${(100 * search.share).toFixed(2)}% of the selection)`;
}

/** The toggles show their state (aria-pressed, styled as pressed). */
function showToggles() {
  $("flame-orient").setAttribute("aria-pressed", String(state.orient === "icicle"));
  $("flame-invert").setAttribute("aria-pressed", String(state.invert));
}

/** The figure beside "Selection": the zoomed frame's weight when zoomed (the whole
 * selection's after it), else the selection's. A wheel zoom (or a drag, or a frame
 * picked with the keyboard off screen) that narrows the flame graph to a range shows
 * the drawn root's weight in that range, to the unit: what is on screen. `total`: the
 * selection's, from the last flame data (kept for the viewport's moves). */
let selectionTotal = 0;
function showSelection(total = selectionTotal) {
  selectionTotal = total;
  const unit = unitOf(state.time);
  const zoomed = state.root.length > 0 && fg.tree && fg.tree.f >= 0;
  const narrowed = Boolean(fg.tree) && !isFull(fg.view);
  const shown = narrowed ? Math.round(fg.tree.t * (fg.view.end - fg.view.start))
    : zoomed ? fg.tree.t : total;
  $("selection-total").textContent = unit.value(shown);
  const whole = $("selection-whole");
  whole.hidden = !zoomed && !narrowed;
  whole.textContent = narrowed ? `in view, of ${unit.value(total)}`
    : zoomed ? `in the zoomed frame, of ${unit.value(total)}` : "";
}

// The names of the frames above the flame graph's drawn root (the zoom's path, or the
// focused function's crumbs), for a frame's whole stack.
let flameAbove = [];

/** The right-click menu of a flame graph frame. */
const menu = new FrameMenu();
function frameMenu(rect, event) {
  const node = rect.node;
  const chain = [];
  for (let r = rect; r; r = r.up) if (r.node.k !== "root") chain.push(r.node.n);
  const stack = flameAbove.concat(chain.reverse());
  const focused = state.focus !== null;
  menu.open(event.clientX, event.clientY, node.n, [
    {id: "copy-name", label: "Copy name", action: () => copyText(node.n)},
    {id: "copy-stack", label: "Copy stack", title: "The frames from the root to this one, one a line",
     action: () => copyText(stack.join("\n"))},
    {id: "show-tree", label: "Show in call tree", disabled: focused || node.f < 0,
     title: focused ? "The call trees are of the whole selection, not of a focused function" : "",
     action: () => {
       state.view = state.invert ? "bottomup" : "topdown";  // the tree the graph draws
       treeFilter = "";
       $("calltree-filter").value = "";
       tree.filter = null;
       tree.reveal(state.root.concat(pathOf(rect)));
       changed({view: true});
     }},
    {id: "focus", label: "Focus on this function", disabled: node.f < 0,
     action: () => fg.onFocus(node.f)},
    ...menuItems(node, applyTransform),
  ]);
}

/** Back or Forward: the view that URL holds, redrawn. */
function restore() {
  const before = {...state};
  Object.assign(state, readState());
  const same = (k) => JSON.stringify(before[k]) === JSON.stringify(state[k]);
  $("flame-search").value = state.search;
  treeFilter = state.search;
  for (const cb of $("threads").querySelectorAll("input")) {
    cb.checked = state.tids.includes(Number(cb.value));
  }
  showToggles();
  showRange();
  showTime();
  showView();  // (and the call tree, when it is the view shown)
  refreshFlame();
  if (!["time", "tids", "start", "end", "dso", "transforms"].every(same)) {
    $("dso-filter").value = state.dso;
    refreshFunctions();
  }
  // the stack chart is of the threads, range and transforms too (the event picker's own
  // Back redraws it for an event)
  if (!["tids", "start", "end", "transforms"].every(same)) refreshStacks();
  refreshLines();
}

// Answers to a question asked again since are dropped: a slow one (a transform computed
// the first time) must not draw over the view Back or the next click asked for.
const latest = {flame: 0, functions: 0, tree: 0};

async function refreshFlame() {
  const t0 = performance.now();
  const asked = ++latest.flame;
  const params = dataParams(state, {flame: true});
  const {data, error} = await flameData(params);
  if (asked !== latest.flame) return;
  transformBar.show(data.transforms || []);
  transformBar.focus(data.focus ?? null, data.focus === undefined ? "" : data.callees.nodes[0].n);
  showShare(data.search, error);
  fg.orient = state.orient;  // setData below draws once
  flameAbove = [];
  fg.search = error ? textMatcher(state.search) : serverMatcher(state.search, data.search);
  const focused = data.focus !== undefined;
  $("callers-box").hidden = !focused;
  if (focused) {
    callers.orient = "icicle";
    callers.search = fg.search;
    callers.setData(unflatten(data.callers), data.total);
    // zoomed below the focused function: the callees' subtree down `root`, walked on the
    // page (the server sends the whole callee tree); a path that no longer matches is cut
    let sub = unflatten(data.callees);
    const crumbs = [{n: sub.n}];
    for (let i = 0; i < state.root.length; i++) {
      const next = (sub.c || []).find((c) => c.f === state.root[i]);
      if (!next) { state.root = state.root.slice(0, i); writeState(state); break; }
      sub = next;
      crumbs.push({n: sub.n});
    }
    fg.setData(sub, data.total);
    flameAbove = crumbs.slice(0, -1).map((c) => c.n);
    breadcrumbs(crumbs, true);
    $("focus-label").textContent = data.callees.nodes[0].n;
  } else {
    fg.setData(unflatten(data.tree), data.total);
    flameAbove = data.path.slice(0, -1).map((p) => p.n);
    breadcrumbs(data.path);
  }
  showSelection(data.total);
  perf.draws.push(fg.lastDrawMs);
  perf.lastFlameMs = performance.now() - t0;
  if (!perf.ready) {
    perf.interactiveMs = performance.now();
    perf.ready = true;
  }
  root.dataset.flameTotal = String(data.total);
  root.dataset.flameUnit = data.unit;
  // the time view these data weigh (off-CPU and wall both come in µs; data-time changes
  // on the click, before they arrive): the view asked, or on-CPU when it was refused
  root.dataset.flameView = params.get("view") || "on-cpu";
}

async function refreshTree() {
  if (state.view === "flame" || state.view === "sandwich") return;
  const invert = state.view === "bottomup";
  const asked = treeFilter;
  const n = ++latest.tree;
  const params = dataParams({...state, root: [], focus: null, search: asked},
                            {flame: true, invert});
  const {data, error} = await flameData(params);
  if (n !== latest.tree) return;
  if (error) showShare(null, error);
  tree.filter = error ? textMatcher(asked) : serverMatcher(asked, data.search);
  tree.setData(unflatten(data.tree), data.total, invert);
}

async function refreshFunctions() {
  const asked = ++latest.functions;
  const params = dataParams(state);
  if (state.dso) params.set("dso", state.dso);
  const {data} = await flameData(params, urls.functions);
  if (asked !== latest.functions) return;
  const select = $("dso-filter");
  if (select.options.length <= 1) {
    for (const d of data.dsos) {
      const o = document.createElement("option");
      o.value = d;
      o.textContent = d;
      select.append(o);
    }
    select.value = state.dso;
  }
  const body = $("functions").tBodies[0];
  body.replaceChildren();
  const pct = (v) => percent(v, data.total);
  const w = unitOf(state.time).value;
  for (const f of data.functions.slice(0, 100)) {
    const tr = document.createElement("tr");
    tr.className = `kind-${f.k}`;
    for (const [v, cls] of [[w(f.s)], [pct(f.s)], [w(f.t)], [pct(f.t)], [f.n, "fn"],
                            [f.d, "dso"]]) {
      const td = document.createElement("td");
      if (cls) td.className = cls;
      if (cls === "fn") {
        // the short name, the full signature as its title, the source file under it
        const name = document.createElement("span");
        name.className = "name";
        name.textContent = String(v);
        td.append(name);
        td.title = f.g || String(v);  // (the name is cut at two lines)
        if (f.src) {
          const src = document.createElement("small");
          src.className = "src";
          src.textContent = basename(f.src);
          src.title = f.src;
          td.append(src);
        }
      } else if (cls === "dso") {
        // the file's name; its folder on hover (a path took four lines)
        td.textContent = basename(String(v));
        td.title = String(v);
      } else {
        td.textContent = String(v);
      }
      tr.append(td);
    }
    tr.addEventListener("click", () => {
      state.focus = f.f;
      state.view = "flame";
      changed({flame: true, view: true});
    });
    body.append(tr);
  }
}

// The hot lines card follows the focus: one request per change of the focused function
// or of the selection it is weighed in (threads, time range, view); answers to an
// earlier question are dropped.
let linesKey = null;
let linesAsked = 0;

async function refreshLines() {
  if (!urls.lines) return;
  if (state.focus === null) {
    linesKey = null;
    linesAsked++;
    hot.hide();
    return;
  }
  const params = dataParams(state);
  if (!switches) params.delete("view");  // refused there; the flame graph drops it too
  params.set("focus", String(state.focus));
  const key = params.toString();
  if (key === linesKey) return;
  linesKey = key;
  const asked = ++linesAsked;
  hot.loading();
  try {
    const data = await getJSON(urls.lines, params);
    if (asked === linesAsked) hot.show(data);
  } catch (e) {
    if (asked !== linesAsked) return;
    linesKey = null;  // asked again at the next change
    hot.error(e.message);
  }
}

async function loadThreads() {
  const data = await getJSON(urls.threads, eventParams(state));
  const box = $("threads");
  box.replaceChildren();
  for (const t of data.threads) {
    const label = document.createElement("label");
    const cb = document.createElement("input");
    cb.type = "checkbox";
    cb.value = String(t.tid);
    cb.checked = state.tids.includes(t.tid);
    cb.addEventListener("change", () => {
      state.tids = [...box.querySelectorAll("input:checked")].map((i) => Number(i.value));
      changed({filters: true});
    });
    const text = document.createElement("span");
    text.textContent = `${t.comm} ${t.pid ?? ""}/${t.tid ?? ""}: ${t.samples}`;
    label.append(cb, text);
    box.append(label);
  }
}

function setRange(a, b) {
  state.start = Math.max(0, a);
  state.end = b;
  showRange();
  changed({filters: true});
}

function showRange() {
  const has = state.start !== null || state.end !== null;
  $("range-status").textContent = has ?
    `Showing ${(state.start ?? 0).toFixed(3)} s to ${state.end === null ? "end" : state.end.toFixed(3) + " s"}` :
    "Showing the whole capture";
  $("range-clear").hidden = !has;
}

async function loadTimeline() {
  const [data] = await Promise.all([
    getJSON(urls.timeline, eventParams(state)), loadPlotly(document.getElementById("capture-main").dataset.plotlyUrl)]);
  drawTimeline($("timeline"), data, setRange);
  drawHeatmap($("heatmap"), data, setRange);
}

/** The timeline's charts need Plotly (4.8 MB, 1.1 MB compressed): it and their data are
 * fetched when the charts come near the screen, not with the page, so a visit that
 * stays with the flame graph never downloads or parses it. */
function whenShown(el, show) {
  const seen = new IntersectionObserver((entries) => {
    if (!entries.some((e) => e.isIntersecting)) return;
    seen.disconnect();
    show();
  }, {rootMargin: "200px"});
  seen.observe(el);
}

// The stack chart: the selected threads (else the busiest) over the page's time range;
// a drag across it sets that range. Asked for once it comes near the screen.
const stacks = new StackChart($("stack-canvas"), $("stack-tooltip"), $("stack-status"),
                              {onRange: setRange});
let stacksShown = false;

function refreshStacks() {
  if (!stacksShown || !urls.stacks) return;
  const params = dataParams(state);
  params.delete("view");  // samples in time order: the on-CPU view only
  const extent = state.start !== null && state.end !== null ? [state.start, state.end] : null;
  stacks.load(urls.stacks, params, extent).catch((e) => {
    $("stack-status").textContent = `The stack chart could not be drawn: ${e.message}`;
  });
}

async function loadStates() {
  const box = $("thread-states");
  if (!box || !urls.states) return;
  const data = await getJSON(urls.states);
  const tip = document.createElement("div");
  tip.className = "tooltip";
  tip.hidden = true;
  const rows = drawStates(box, data, tip, setRange);
  $("states-box").hidden = rows === 0;
  box.dataset.rows = String(rows);
}

function wire() {
  const search = $("flame-search");
  search.value = state.search;
  let timer = null;
  search.addEventListener("input", () => {
    state.search = search.value;
    const t0 = performance.now();
    fg.setSearch(textMatcher(state.search));
    perf.lastSearchDrawMs = performance.now() - t0;
    treeFilter = state.search;
    tree.setFilter(textMatcher(treeFilter), state.view !== "flame");
    clearTimeout(timer);
    // the frames containing the text are highlighted already; the server counts the
    // matching samples and names the functions its (regular expression) search matched
    timer = setTimeout(async () => {
      writeState(state);
      const asked = state.search;
      const {data, error} = await flameData(dataParams(state, {flame: true}));
      if (asked !== state.search) return;  // typing went on; a later answer follows
      showShare(data.search, error);
      if (!error) {
        callers.search = serverMatcher(asked, data.search);
        fg.setSearch(serverMatcher(asked, data.search));
        if (data.focus !== undefined) callers.draw();
      }
      refreshTree();
    }, 250);
  });
  $("flame-reset").addEventListener("click", () => {
    state.root = [];
    state.focus = null;
    changed({flame: true});
  });
  $("flame-orient").addEventListener("click", () => {
    state.orient = state.orient === "flame" ? "icicle" : "flame";
    writeState(state, {push: true});
    showToggles();
    fg.setOrientation(state.orient);
  });
  $("flame-invert").addEventListener("click", () => {
    state.invert = !state.invert;
    state.root = [];
    state.focus = null;
    changed({flame: true});
  });
  for (const b of document.querySelectorAll("#view-tabs button")) {
    b.addEventListener("click", () => { state.view = b.dataset.view; changed({view: true}); });
  }
  for (const b of document.querySelectorAll("#time-tabs button")) {
    b.addEventListener("click", () => {
      if (state.time === b.dataset.time) return;
      state.time = b.dataset.time;
      changed({time: true, filters: true});
    });
  }
  $("dso-filter").addEventListener("change", (e) => {
    state.dso = e.target.value;
    writeState(state);
    refreshFunctions();
  });
  $("range-clear").addEventListener("click", () => {
    state.start = null;
    state.end = null;
    showRange();
    changed({filters: true});
  });
  let filterTimer = null;
  $("calltree-filter").addEventListener("input", (e) => {
    treeFilter = e.target.value;
    tree.setFilter(textMatcher(treeFilter));
    clearTimeout(filterTimer);
    filterTimer = setTimeout(refreshTree, 250);  // the server's matches, regexes too
  });
  document.addEventListener("keydown", (e) => {
    if (e.target.matches("input, textarea, select")) {
      if (e.key === "Escape") e.target.blur();
      return;
    }
    if (e.key === "/") { e.preventDefault(); search.focus(); }
    else if (e.key === "Escape") { state.root = []; state.focus = null; changed({flame: true}); }
    else if (e.key === "i") $("flame-invert").click();
    else if (e.key === "o") $("flame-orient").click();
    else if (e.key === "f" && fg.hover && fg.hover.node.f >= 0) fg.onFocus(fg.hover.node.f);
    else if (e.key === "f" && e.target === fg.canvas && fg.selected && fg.selected.f >= 0) {
      fg.onFocus(fg.selected.f);  // the frame picked with the arrow keys
    }
  });
}

// for tests and benchmarks: where a frame is drawn, and a timed redraw
perf.frameCenter = (name) => {
  fg.flush();  // a redraw pending (the page's other views resized it) moves the frames
  const r = fg.frameAt(name);
  return r ? {...fg.centerOf(r), total: r.node.t, self: r.node.s} : null;
};
perf.redraw = () => fg.draw();
// the sandwich view's drawn frames: "callers" or "callees"
perf.sandwichFrames = (which) => sandwich[which].rects.map(
  (r) => ({name: r.node.n, f: r.node.f, total: r.node.t, self: r.node.s, depth: r.depth,
           ...sandwich[which].centerOf(r)}));
// the names the stack chart paints at time t (s from the first sample) in a thread's lane
perf.stackAt = (tid, t) => stacks.stackAt(tid, t);
perf.stackView = () => stacks.view;
// the viewport as weights of the drawn root (a wheel zoom narrows it), and what is drawn
// at a point of the canvas, once a pending redraw is done
perf.flameView = () => {
  fg.flush();
  const t = fg.tree ? fg.tree.t : 0;
  return {start: fg.view.start * t, end: fg.view.end * t, total: t, width: fg.width};
};
const frameInfo = (r) => (r ? {name: r.node.n, total: r.node.t, self: r.node.s, f: r.node.f,
                                depth: r.depth, dim: Boolean(r.dim), label: r.label,
                                room: r.room, left: r.x, w: r.w, ...fg.centerOf(r)} : null);
perf.frameAtPoint = (x, y) => { fg.flush(); return frameInfo(fg.hitAt(x, y)); };
perf.selectedFrame = () => {
  fg.flush();
  return fg.selected ? frameInfo(fg.rectOf(fg.selected)) : null;
};
perf.drawnFrames = () => { fg.flush(); return fg.rects.map(frameInfo); };

wire();
window.addEventListener("popstate", restore);
showToggles();
showRange();
showTime();
showView();
// the flame graph's request first, alone: the server answers the others after it (two
// or three workers share two cores), and the tables below are not on screen yet
refreshFlame().finally(() => {
  refreshFunctions();
  refreshLines();
  loadThreads();
  loadStates().catch(() => {
    $("thread-states").textContent = "The thread states could not be drawn.";
    $("states-box").hidden = false;
  });
  whenShown($("stack-chart-box"), () => { stacksShown = true; refreshStacks(); });
  whenShown($("timeline").closest("section"), () => loadTimeline().catch(() => {
    $("timeline").textContent = "The timeline could not be drawn.";
  }));
});
