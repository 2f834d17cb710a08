// The event picker: a capture recorded with several events (`perf record -e
// cpu-clock,page-faults`) is explored one event at a time. `event=` (an index of the
// capture's events) is in the URL and in every data request (state.js), absent for the
// event the capture page shows by default. Only the on-CPU view weighs events: the
// off-CPU and wall-clock views are time from the context switches.
"use strict";

import {readState} from "./state.js";

/** The `event=` parameter alone (the threads' and the timeline's requests). */
export function eventParams(state) {
  const p = new URLSearchParams();
  if (state.event !== null) p.set("event", String(state.event));
  return p;
}

export class EventPicker {
  /** `onPick()`: the user chose another event; `onBack()`: history brought one back. */
  constructor(select, state, {onPick, onBack}) {
    this.select = select;
    this.state = state;
    if (!select) {
      state.event = null;
      return;
    }
    const options = [...select.options];
    this.fallback = (options.find((o) => o.defaultSelected) || options[0] || {}).value;
    select.closest("label").hidden = options.length < 2;
    // a link naming an event the capture has no samples of shows the default one
    if (state.event !== null && !options.some((o) => o.value === String(state.event))) {
      state.event = null;
    }
    select.addEventListener("change", () => {
      state.event = select.value === this.fallback ? null : Number(select.value);
      this.show();
      onPick();
    });
    window.addEventListener("popstate", () => {
      const asked = readState().event;
      if (asked === this.shown) return;
      state.event = asked;
      this.show();
      onBack();
    });
    this.show();
  }

  /** The state's event selected; the picker is off outside the on-CPU view. */
  show() {
    if (!this.select) return;
    const wanted = this.state.event === null ? this.fallback : String(this.state.event);
    this.select.value = wanted;
    this.shown = this.state.event;
    this.select.disabled = this.state.time !== "on-cpu";
    this.select.title = this.select.disabled ?
      "The off-CPU and wall-clock views weigh time, not an event's samples" : "";
  }
}
