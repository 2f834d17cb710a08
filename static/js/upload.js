// Upload with a progress bar: the same POST the form makes, sent by XHR so the browser
// reports bytes sent. Without JavaScript the form posts normally.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("upload-form");
  if (!form || !window.XMLHttpRequest) return;
  const bar = document.getElementById("upload-progress");
  const status = document.getElementById("upload-status");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action || window.location.href);
    xhr.setRequestHeader("Accept", "application/json");
    bar.hidden = false;
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) {
        bar.value = Math.round((100 * e.loaded) / e.total);
        status.textContent = `Uploading: ${bar.value}%`;
      }
    });
    xhr.addEventListener("load", () => {
      let body = {};
      try { body = JSON.parse(xhr.responseText); } catch (e) { body = {}; }
      if (xhr.status === 200 && body.url) {
        window.location.assign(body.url);
        return;
      }
      const errors = body.errors || {};
      const lines = [];
      for (const field of Object.keys(errors)) {  // __all__: quota, full storage
        for (const err of errors[field]) {
          lines.push(field === "__all__" ? err.message : `${field}: ${err.message}`);
        }
      }
      if (body.detail) lines.push(body.detail);  // too large (413), database down (503)
      status.textContent = lines.length ? lines.join("; ") :
        `Upload failed (HTTP ${xhr.status}).`;
      bar.hidden = true;
    });
    xhr.addEventListener("error", () => {
      status.textContent = "Upload failed: the connection was lost.";
      bar.hidden = true;
    });
    xhr.send(new FormData(form));
  });
});

// A file dropped anywhere on the form becomes the capture (the first one; the others are
// for the symbol field, which has its own chooser).
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("upload-form");
  const input = document.getElementById("id_capture");
  const hint = document.getElementById("drop-hint");
  if (!form || !input || !window.DataTransfer) return;
  for (const kind of ["dragenter", "dragover"]) {
    form.addEventListener(kind, (event) => {
      event.preventDefault();
      form.classList.add("dropping");
    });
  }
  form.addEventListener("dragleave", () => form.classList.remove("dropping"));
  form.addEventListener("drop", (event) => {
    event.preventDefault();
    form.classList.remove("dropping");
    const files = event.dataTransfer && event.dataTransfer.files;
    if (!files || !files.length) return;
    const one = new DataTransfer();
    one.items.add(files[0]);
    input.files = one.files;
    hint.textContent = `Capture: ${files[0].name}`;
  });
});

/** Levenshtein distance, to tell a typo of a known service from a new one. */
function distance(a, b) {
  let row = Array.from({length: b.length + 1}, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}

// Typing a service name the teams do not have says a new service will be made, and
// names the known one it is close to (a typo would split a service's history in two).
document.addEventListener("DOMContentLoaded", () => {
  const field = document.getElementById("id_service");
  const note = document.getElementById("service-new");
  const list = document.getElementById("known-services");
  if (!field || !note || !list) return;
  const known = [...list.options].map((o) => o.value);
  const check = () => {
    const name = field.value.trim();
    if (!name || !known.length || known.includes(name)) {
      note.hidden = true;
      note.textContent = "";
      return;
    }
    const near = known
      .map((k) => [distance(name.toLowerCase(), k.toLowerCase()), k])
      .filter(([d, k]) => d <= Math.max(1, Math.floor(Math.min(name.length, k.length) / 4)))
      .sort((x, y) => x[0] - y[0]);
    note.textContent = near.length
      ? `A new service “${name}” will be made. Did you mean “${near[0][1]}”?`
      : `A new service “${name}” will be made.`;
    note.hidden = false;
  };
  field.addEventListener("input", check);
  check();
});
