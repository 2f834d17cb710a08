// The page's view state lives in the URL, so a reload or a shared link shows the same view.
"use strict";

import {TIME_VIEWS} from "./units.js";

const ints = (v) => (v ? v.split(",").filter((x) => x !== "").map(Number) : []);

export function readState(search = window.location.search) {
  const p = new URLSearchParams(search);
  const num = (k) => (p.has(k) && p.get(k) !== "" ? Number(p.get(k)) : null);
  return {
    view: p.get("view") || "flame",          // flame | topdown | bottomup | sandwich
    // what the views weigh: on-cpu (samples) | off-cpu | wall (µs, from context switches)
    time: TIME_VIEWS.includes(p.get("time")) ? p.get("time") : "on-cpu",
    orient: p.get("orient") || "flame",      // flame (root at bottom) | icicle
    invert: p.get("invert") === "1",
    root: ints(p.get("root")),                // function ids down to the zoomed frame
    focus: num("focus"),
    search: p.get("search") || "",
    tids: ints(p.get("tids")),
    start: num("start"),
    end: num("end"),
    dso: p.get("dso") || "",
    event: num("event"),                      // an index of the capture's events; null: default
    // the sandwich view's table order (its pick is `focus`)
    sort: ["total", "name", "dso"].includes(p.get("sort")) ? p.get("sort") : "self",
    // call-tree transforms in the order applied: "mf-12", "df-40" (transforms.js)
    transforms: (p.get("tf") || "").split(".").filter(Boolean),
  };
}

/** The state into the URL. `push`: a new history entry (a zoom, a focus, an invert: Back
 * returns to the view before it) when the URL changes; else the current one is replaced
 * (typing in the search box, the page correcting a link). */
export function writeState(state, {push = false} = {}) {
  const p = new URLSearchParams();
  if (state.view !== "flame") p.set("view", state.view);
  if (state.time !== "on-cpu") p.set("time", state.time);
  if (state.orient !== "flame") p.set("orient", state.orient);
  if (state.invert) p.set("invert", "1");
  if (state.root.length) p.set("root", state.root.join(","));
  if (state.focus !== null) p.set("focus", String(state.focus));
  if (state.search) p.set("search", state.search);
  if (state.tids.length) p.set("tids", state.tids.join(","));
  if (state.start !== null) p.set("start", state.start.toFixed(3));
  if (state.end !== null) p.set("end", state.end.toFixed(3));
  if (state.dso) p.set("dso", state.dso);
  if (state.event !== null) p.set("event", String(state.event));
  if (state.sort && state.sort !== "self") p.set("sort", state.sort);
  if (state.transforms.length) p.set("tf", state.transforms.join("."));
  const qs = p.toString();
  const url = qs ? `?${qs}` : window.location.pathname;
  if (push && (qs ? `?${qs}` : "") !== window.location.search) {
    window.history.pushState(null, "", url);
  } else {
    window.history.replaceState(null, "", url);
  }
}

// What the data endpoints need: the view, the filters, and for the flame graph the zoom
// and focus. The endpoints' `view` is the page's `time` (its `view` is the tab shown).
export function dataParams(state, {flame = false, invert = state.invert} = {}) {
  const p = new URLSearchParams();
  if (state.time && state.time !== "on-cpu") p.set("view", state.time);
  if (state.tids.length) p.set("tids", state.tids.join(","));
  if (state.start !== null) p.set("start", String(state.start));
  if (state.end !== null) p.set("end", String(state.end));
  if (state.event !== null) p.set("event", String(state.event));
  if (state.transforms && state.transforms.length) p.set("tf", state.transforms.join("."));
  if (flame) {
    if (state.focus !== null) p.set("focus", String(state.focus));
    else if (state.root.length) p.set("root", state.root.join(","));
    if (invert) p.set("invert", "1");
    if (state.search) p.set("search", state.search);
  }
  return p;
}
