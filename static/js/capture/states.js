// The thread state timeline: one row per thread, one column per slice of the capture,
// each column split into the share of the slice the thread ran, was blocked (switched out
// voluntarily: a lock, I/O, a sleep) and was runnable waiting for a CPU, from the context
// switches. Canvas rows; thread names go in with textContent, never as HTML.
"use strict";

export const STATE_COLORS = {running: "#22c55e", runnable: "#f59e0b", blocked: "#dc2626"};
const HEIGHT = 18;

const seconds = (s) => `${s.toFixed(3)} s`;

/** One row's columns: running at the bottom, runnable above it, blocked on top. */
function paintRow(canvas, t) {
  const width = canvas.clientWidth || 600;  // hidden: a fallback width
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(HEIGHT * dpr);
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, HEIGHT);
  const n = t.blocked.length;
  const step = width / n;
  for (let i = 0; i < n; i++) {
    const blocked = t.blocked[i];
    const runnable = Math.min(t.runnable[i], 1 - blocked);
    const running = Math.max(0, 1 - blocked - runnable);
    const x = i * step;
    const w = Math.max(step, 1);  // no hairline gaps between columns
    let y = HEIGHT;
    for (const [share, color] of [[running, STATE_COLORS.running],
                                  [runnable, STATE_COLORS.runnable],
                                  [blocked, STATE_COLORS.blocked]]) {
      if (share <= 0) continue;
      const h = share * HEIGHT;
      ctx.fillStyle = color;
      ctx.fillRect(x, y - h, w, h);
      y -= h;
    }
  }
}

/** Draw `data` (the states endpoint) into `box`; `onRange(a, b)` for a drag across a
 * row (seconds from the start of the switches, which is within milliseconds of the
 * first sample the other views count from). Returns the number of rows drawn. */
export function drawStates(box, data, tooltip, onRange) {
  box.replaceChildren();
  if (!data.threads.length) return 0;
  const rows = [];
  for (const t of data.threads) {
    const row = document.createElement("div");
    row.className = "state-row";
    row.dataset.tid = String(t.tid);
    const label = document.createElement("span");
    label.className = "state-label";
    label.textContent = `${t.comm} ${t.tid}`;
    label.title = label.textContent;
    const canvas = document.createElement("canvas");
    const times = document.createElement("span");
    times.className = "state-times";
    times.textContent = `on CPU ${seconds(t.on_cpu_s)} · blocked ${seconds(t.blocked_s)}` +
      ` · waiting for a CPU ${seconds(t.preempted_s)}`;
    row.append(label, canvas, times);
    box.append(row);
    rows.push([canvas, t]);
    wire(canvas, t, data, tooltip, onRange);
  }
  if (data.more_threads) {
    const more = document.createElement("p");
    more.className = "hint";
    more.textContent = `${data.more_threads} more threads are not drawn.`;
    box.append(more);
  }
  const axis = document.createElement("div");
  axis.className = "state-axis";
  const ends = document.createElement("span");
  ends.className = "ends";
  const a = document.createElement("span");
  a.textContent = "0 s";
  const b = document.createElement("span");
  b.textContent = `${data.duration.toFixed(2)} s`;
  ends.append(a, b);
  axis.append(document.createElement("span"), ends, document.createElement("span"));
  box.append(axis, tooltip);
  const paint = () => { for (const [canvas, t] of rows) paintRow(canvas, t); };
  paint();
  window.addEventListener("resize", paint);
  return rows.length;
}

function wire(canvas, t, data, tooltip, onRange) {
  const at = (event) => {
    const box = canvas.getBoundingClientRect();
    const x = Math.min(Math.max(event.clientX - box.left, 0), box.width);
    return {x, s: box.width ? x / box.width * data.duration : 0};
  };
  canvas.addEventListener("mousemove", (event) => {
    const {s} = at(event);
    const i = Math.min(t.blocked.length - 1, Math.floor(s / data.bucket_s));
    const pct = (v) => `${Math.round(100 * v)}%`;
    const blocked = t.blocked[i];
    const runnable = Math.min(t.runnable[i], 1 - blocked);
    tooltip.replaceChildren();
    const head = document.createElement("strong");
    head.textContent = `${t.comm} ${t.tid}`;
    const line = document.createElement("div");
    const [a, b] = [i * data.bucket_s, (i + 1) * data.bucket_s];
    line.textContent = `${a.toFixed(3)}–${b.toFixed(3)} s: ` +
      `running ${pct(Math.max(0, 1 - blocked - runnable))} · blocked ${pct(blocked)} · ` +
      `waiting for a CPU ${pct(runnable)}`;
    tooltip.append(head, line);
    tooltip.hidden = false;
    const parent = tooltip.parentElement.getBoundingClientRect();
    tooltip.style.left = `${Math.min(event.clientX - parent.left + 12, parent.width - 320)}px`;
    tooltip.style.top = `${event.clientY - parent.top + 14}px`;
  });
  canvas.addEventListener("mouseleave", () => { tooltip.hidden = true; });
  let from = null;
  canvas.addEventListener("mousedown", (event) => { from = at(event); event.preventDefault(); });
  window.addEventListener("mouseup", (event) => {
    if (from === null) return;
    const to = at(event);
    const start = from;
    from = null;
    if (Math.abs(to.x - start.x) < 4) return;  // a click, not a drag
    onRange(Math.min(start.s, to.s), Math.max(start.s, to.s));
  });
}
