// The Share card: a new link carries the explorer's view (the page's URL query, which
// state.js keeps current), and each link copies with one click.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("share-form");
  if (form) {
    form.addEventListener("submit", () => {
      document.getElementById("share-view").value = window.location.search;
    });
  }
  for (const button of document.querySelectorAll("#share-links button.copy")) {
    button.addEventListener("click", async () => {
      const text = button.dataset.copy;
      try {
        await navigator.clipboard.writeText(text);
      } catch (e) {  // no clipboard permission: select it for Ctrl-C
        const input = button.parentElement.querySelector("input.share-url");
        input.select();
        document.execCommand("copy");
      }
      button.textContent = "Copied";
    });
  }
});
