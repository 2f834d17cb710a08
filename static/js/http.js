// JSON from our own endpoints, with the session cookie; a failed answer is an error
// carrying its status and the server's message ({"error": "..."}) when it sent one.
"use strict";

// A 429 whose Retry-After is this short says the server's compute slots were all taken
// for a moment (perfweb/captures/compute_slots.py): asked again after that wait, a few
// times. A rate limit's 429 (a longer wait) is said, as any other error.
const BUSY_WAIT_S = 5;
const BUSY_TRIES = 12;

// A page asks for at most this many answers at once, the others wait their turn here: the
// server computes at most PERFWEB_COMPUTE_SLOTS (2 by default) explorer answers at once
// per host, so a page asking for its flame graph, tables and timeline all at once was
// refused "busy" by its own requests and drew a second later. An answer slower than
// TURN_MS gives its turn up (a stale view's answer must not hold up the view shown now);
// the server's "busy" then covers what is left.
const AT_ONCE = 2;
const TURN_MS = 2000;
let running = 0;
const waiting = [];

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function turn() {
  if (running < AT_ONCE) {
    running++;
  } else {
    await new Promise((resolve) => waiting.push(resolve));  // (handed a turn by another)
  }
  let held = true;
  const giveUp = () => {
    if (!held) return;
    held = false;
    const next = waiting.shift();
    if (next) next();
    else running--;
  };
  const timer = setTimeout(giveUp, TURN_MS);
  return () => { clearTimeout(timer); giveUp(); };
}

// How many answers the page is still waiting for (in the queue, asked, or waiting to ask
// again after a "busy"), on <html data-asking>: "the page has settled" is this at 0, which
// no network-idle wait can tell while an ask sleeps between tries.
let asking = 0;

function counted(step) {
  asking += step;
  document.documentElement.dataset.asking = String(asking);
}

export async function getJSON(url, params) {
  counted(1);
  try {
    const release = await turn();
    try {
      return await ask(url, params);
    } finally {
      release();
    }
  } finally {
    counted(-1);
  }
}

async function ask(url, params) {
  const q = params && params.toString();
  for (let attempt = 1; ; attempt++) {
    const response = await fetch(q ? `${url}?${q}` : url, {
      headers: {Accept: "application/json"}, credentials: "same-origin"});
    const wait = Number(response.headers.get("Retry-After"));
    if (response.status === 429 && wait > 0 && wait <= BUSY_WAIT_S && attempt < BUSY_TRIES) {
      await sleep(wait * 1000 * (0.5 + Math.random()));  // (not all at once again)
      continue;
    }
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      const error = new Error(body.error || `${response.status}`);
      error.status = response.status;
      throw error;
    }
    return response.json();
  }
}
