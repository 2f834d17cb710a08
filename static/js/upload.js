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
