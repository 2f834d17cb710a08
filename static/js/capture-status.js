// While a capture is being analyzed, poll its status and show progress; reload the page
// when it is done (or failed) so the results appear.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const box = document.getElementById("status");
  if (!box) return;
  const terminal = new Set(["done", "failed"]);
  if (terminal.has(box.dataset.status)) return;
  const text = document.getElementById("status-text");
  const bar = document.getElementById("status-progress");
  const poll = async () => {
    try {
      const response = await fetch(box.dataset.statusUrl, {headers: {Accept: "application/json"}});
      if (response.ok) {
        const s = await response.json();
        text.textContent = s.status;
        if (bar) bar.value = s.progress;
        if (s.finished) { window.location.reload(); return; }
      }
    } catch (e) { /* try again */ }
    setTimeout(poll, 1500);
  };
  setTimeout(poll, 1000);
});
