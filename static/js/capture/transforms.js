// Call-tree transforms on the page (the server applies them: analysis/transforms.py):
// the stack applied, as chips that remove one; the actions on the focused function (a
// toolbar) and on a frame (the flame graph's right-click menu). The page keeps the stack
// in its URL as `tf=mf-12.df-40` (state.js). Names go in with textContent only.
"use strict";

/** The transforms, as the server names them, with what a button says and does. */
export const TRANSFORMS = [
  {kind: "mf", label: "Merge function",
   title: "Take the function out of every stack: its self time goes to its caller"},
  {kind: "df", label: "Drop samples with this function",
   title: "Leave out every sample whose stack holds the function"},
  {kind: "cr", label: "Collapse library",
   title: "Make each run of frames of the function's library one frame named after it"},
  {kind: "rec", label: "Collapse recursion",
   title: "Make the function calling itself directly one frame"},
];

/** The stack without the transform at `i`; a collapsed library's frame is a function
 * the later transforms may name (its id follows the collapses before it), so removing
 * a collapse removes those after it too. */
export function without(list, i) {
  return list[i].startsWith("cr-") ? list.slice(0, i) : list.filter((_, k) => k !== i);
}

/** The right-click menu's items for a frame's function (framemenu.js). */
export function menuItems(node, apply) {
  return TRANSFORMS.map((t) => ({
    id: `transform-${t.kind}`, label: t.label, title: t.title, disabled: node.f < 0,
    action: () => apply(t.kind, node.f),
  }));
}

export class TransformBar {
  /** `box` holds the chips (#transforms) and the toolbar (#transform-tools);
   * `apply(kind, fid)` adds one, `remove(i)` takes one off. */
  constructor(box, {apply, remove}) {
    this.box = box;
    this.chips = box.querySelector("#transform-chips");
    this.tools = box.querySelector("#transform-tools");
    this.target = box.querySelector("#transform-target");
    this.remove = remove;
    this.fid = null;
    this.buttons = TRANSFORMS.map((t) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "secondary";
      b.dataset.kind = t.kind;
      b.textContent = t.label;
      b.title = t.title;
      b.addEventListener("click", () => { if (this.fid !== null) apply(t.kind, this.fid); });
      return b;
    });
    this.tools.append(...this.buttons);
  }

  /** The stack the server applied: [{t, kind, verb, n}] (the flame answer's). */
  show(applied) {
    this.chips.replaceChildren(...applied.map((t, i) => {
      const chip = document.createElement("span");
      chip.className = `chip transform-${t.kind}`;
      chip.dataset.t = t.t;
      const verb = document.createElement("span");
      verb.textContent = `${t.verb} `;
      const name = document.createElement("strong");
      name.textContent = t.n;
      const x = document.createElement("button");
      x.type = "button";
      x.className = "chip-remove";
      x.textContent = "×";
      x.title = "Remove this transform";
      x.setAttribute("aria-label", `Remove: ${t.verb} ${t.n}`);
      x.addEventListener("click", () => this.remove(i));
      chip.append(verb, name, x);
      return chip;
    }));
    this.chips.hidden = applied.length === 0;
    this.box.dataset.transforms = applied.map((t) => t.t).join(".");
  }

  /** The function the toolbar acts on (the focused one), or null: no toolbar. */
  focus(fid, name) {
    this.fid = fid;
    this.tools.hidden = fid === null;
    this.target.textContent = fid === null ? "" : name;
  }
}
