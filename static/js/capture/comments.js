// Comments on the capture page: the form shows the fields of what the comment is about
// (a finding, a function, a time range) and, left empty, takes the explorer's focused
// function or selected time range from the URL; a comment on a function or a range
// brings the explorer to it (the page's URL state, redrawn as Back and Forward redraw).
"use strict";

import {readState} from "./state.js";

const $ = (id) => document.getElementById(id);

function showFields(form) {
  const kind = $("comment-kind").value;
  for (const el of form.querySelectorAll("[data-for]")) el.hidden = el.dataset.for !== kind;
}

function wireForm(form) {
  showFields(form);
  $("comment-kind").addEventListener("change", () => showFields(form));
  form.addEventListener("submit", () => {
    const state = readState();
    const kind = $("comment-kind").value;
    $("comment-function-id").value = "";
    if (kind === "function" && !$("comment-function").value.trim() && state.focus !== null) {
      $("comment-function-id").value = String(state.focus);
    }
    if (kind === "range" && !$("comment-start").value && !$("comment-end").value &&
        state.start !== null && state.end !== null) {
      $("comment-start").value = String(state.start);
      $("comment-end").value = String(state.end);
    }
  });
}

// a link to the explorer's state ("?focus=12#explorer", "?start=1.000&end=2.000#explorer"):
// the URL changes as a zoom's does, and the page's popstate handler redraws that view
function wireTargets() {
  document.addEventListener("click", (e) => {
    const a = e.target.closest("a.comment-target");
    if (!a || !a.getAttribute("href").startsWith("?") || e.ctrlKey || e.metaKey ||
        e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    const url = new URL(a.href);
    window.history.pushState(null, "", url.search);
    window.dispatchEvent(new PopStateEvent("popstate"));
    $("explorer").scrollIntoView({block: "start"});
  });
}

const form = $("comment-form");
if (form) wireForm(form);
wireTargets();
