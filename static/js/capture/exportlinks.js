// The "this selection" download links (pprof, Firefox Profiler): each carries the explorer's
// selection as the data endpoints get it (threads, time range, event, view, transforms),
// read from the URL when the link is used, so the file holds the samples the page shows.
// The folded stacks and speedscope links carry the event and view the page shows.
"use strict";

import {dataParams, readState} from "./state.js";

function withSelection(link) {
  const base = link.getAttribute("href").split("?")[0];
  const qs = dataParams(readState()).toString();
  link.setAttribute("href", qs ? `${base}?${qs}` : base);
}

function withShown(link) {
  const base = link.getAttribute("href").split("?")[0];
  const all = dataParams(readState());
  const qs = new URLSearchParams();
  for (const key of ["event", "view"]) {
    if (all.get(key)) qs.set(key, all.get(key));
  }
  link.setAttribute("href", qs.toString() ? `${base}?${qs}` : base);
}

for (const [selector, update] of [["a[data-export-selection]", withSelection],
                                  ["a[data-export-shown]", withShown]]) {
  for (const link of document.querySelectorAll(selector)) {
    for (const kind of ["pointerdown", "focus", "click", "mouseenter"]) {
      link.addEventListener(kind, () => update(link));
    }
  }
}
