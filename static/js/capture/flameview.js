// The flame graph's horizontal viewport: which part of the drawn root's width is on
// screen, as fractions {start, end} of it (0..1). Wheel zoom and drag pan change it on
// the page alone: the server's zoom (a click, the URL's `root`) gives a new tree and a
// whole view again. Pure functions, so the arithmetic is testable apart from the canvas.
"use strict";

export const FULL = Object.freeze({start: 0, end: 1});

/** The view moved back inside 0..1 whole, its width kept (at most 1). */
export function clampView(view) {
  const span = Math.min(1, Math.max(0, view.end - view.start));
  const start = Math.max(0, Math.min(view.start, 1 - span));
  return {start, end: start + span};
}

/** `view` scaled by `factor` (< 1 narrows it) about `at`, the pointer's place in the
 * viewport (0 left edge, 1 right edge): the point under the pointer stays under it. A
 * narrower view stays inside the one before, so zooming in never needs the clamp. */
export function zoomView(view, factor, at, minSpan = 1e-9) {
  const span = view.end - view.start;
  const next = Math.min(1, Math.max(minSpan, span * factor));
  const pivot = view.start + at * span;
  return clampView({start: pivot - at * next, end: pivot - at * next + next});
}

/** `view` moved right by `by` viewport widths (negative: left), stopped at the ends. */
export function panView(view, by) {
  const shift = by * (view.end - view.start);
  return clampView({start: view.start + shift, end: view.end + shift});
}

export function isFull(view) {
  return view.start <= 0 && view.end >= 1;
}

/** The narrowest view that shows [a, b] (fractions) whole, moving `view` as little as
 * it must: for a frame picked with the keyboard outside the screen. */
export function showSpan(view, a, b) {
  if (a >= view.start && b <= view.end) return view;
  const span = Math.max(view.end - view.start, b - a);
  const start = a < view.start ? a : b - span;
  return clampView({start, end: start + span});
}
