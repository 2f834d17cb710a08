// The "this selection" download links (pprof, Firefox Profiler): each carries the explorer's
// selection as the data endpoints get it (threads, time range, event, view, transforms),
// read from the URL when the link is used, so the file holds the samples the page shows.
"use strict";

import {dataParams, readState} from "./state.js";

function withSelection(link) {
  const base = link.getAttribute("href").split("?")[0];
  const qs = dataParams(readState()).toString();
  link.setAttribute("href", qs ? `${base}?${qs}` : base);
}

for (const link of document.querySelectorAll("a[data-export-selection]")) {
  for (const kind of ["pointerdown", "focus", "click", "mouseenter"]) {
    link.addEventListener(kind, () => withSelection(link));
  }
}
