// A canvas sized for the screen's pixel density, shared by the flame graph and the
// stack chart.
"use strict";

/** Size `canvas` to width x height CSS pixels at the device's pixel ratio and return its
 * cleared 2D context, scaled to CSS pixels, with the frames' font. A canvas past 32,767
 * device pixels a side (or 2^28 in all) stays blank: a tall one is drawn at a lower
 * resolution instead. The backing store is resized only when it changes (a resize clears
 * it as well). */
export function sizedContext(canvas, width, height) {
  const dpr = Math.min(window.devicePixelRatio || 1, 32767 / height, 32767 / width,
                       Math.sqrt(2 ** 28 / (width * height)));
  const w = Math.round(width * dpr);
  const h = Math.round(height * dpr);
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
  }
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.font = "12px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  return ctx;
}
