// What the explorer's numbers weigh: CPU samples (the on-CPU view) or microseconds (the
// off-CPU and wall-clock views, from the capture's context switches), and how each reads.
"use strict";

export const TIME_VIEWS = ["on-cpu", "off-cpu", "wall"];

/** Microseconds as milliseconds, or seconds from one second up. */
export function duration(us) {
  if (us >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (us >= 1e4) return `${(us / 1e3).toFixed(1)} ms`;
  return `${(us / 1e3).toFixed(2)} ms`;
}

/** `value(n)` writes one weight; `label` says what it counts (after a number);
 * `suffix` goes after each weight in tooltips ("" for samples, as before). */
export function unitOf(time) {
  if (time === "off-cpu") return {value: duration, label: "off-CPU", suffix: " off-CPU"};
  if (time === "wall") return {value: duration, label: "wall-clock", suffix: " wall-clock"};
  return {value: String, label: "samples", suffix: ""};
}
