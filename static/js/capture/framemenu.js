// The flame graph's menu on a right click: a list of actions for one frame, at the
// pointer, kept inside the window. Labels go in with textContent; the actions are the
// page's (main.js), so other graphs can offer their own.
"use strict";

export class FrameMenu {
  constructor(doc = document) {
    this.el = doc.createElement("div");
    this.el.className = "frame-menu";
    this.el.id = "frame-menu";
    this.el.setAttribute("role", "menu");
    this.el.hidden = true;
    doc.body.append(this.el);
    this.el.addEventListener("keydown", (e) => this._key(e));
    // anything but a click inside it closes it
    doc.addEventListener("mousedown", (e) => { if (!this.el.contains(e.target)) this.close(); });
    window.addEventListener("scroll", () => this.close(), true);
    window.addEventListener("blur", () => this.close());
    window.addEventListener("resize", () => this.close());
  }

  /** `title`: the frame's name; `items`: [{label, action, disabled, title}]. */
  open(x, y, title, items) {
    const head = document.createElement("div");
    head.className = "frame-menu-title";
    head.textContent = title;
    const buttons = items.map((item) => {
      const b = document.createElement("button");
      b.type = "button";
      b.setAttribute("role", "menuitem");
      b.textContent = item.label;
      if (item.id) b.dataset.action = item.id;
      if (item.title) b.title = item.title;
      b.disabled = Boolean(item.disabled);
      b.addEventListener("click", () => {
        this.close();
        item.action();
      });
      return b;
    });
    this.el.replaceChildren(head, ...buttons);
    this.el.hidden = false;
    this.el.style.left = "0px";
    this.el.style.top = "0px";
    const vw = document.documentElement.clientWidth || window.innerWidth;
    const vh = document.documentElement.clientHeight || window.innerHeight;
    const w = this.el.offsetWidth;
    const h = this.el.offsetHeight;
    this.el.style.left = `${Math.max(0, Math.min(x, vw - w))}px`;
    this.el.style.top = `${Math.max(0, y + h <= vh ? y : y - h)}px`;
    const first = buttons.find((b) => !b.disabled);
    if (first) first.focus();
  }

  close() {
    if (this.el.hidden) return;
    this.el.hidden = true;
    this.el.replaceChildren();
  }

  /** Up and down between the actions, Escape closes. */
  _key(e) {
    if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();  // (the page's Escape resets the zoom)
      this.close();
      return;
    }
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    e.preventDefault();
    const live = [...this.el.querySelectorAll("button:not(:disabled)")];
    const i = live.indexOf(document.activeElement);
    const step = e.key === "ArrowDown" ? 1 : -1;
    const next = live[(i + step + live.length) % live.length];
    if (next) next.focus();
  }
}

/** `text` on the clipboard; where the Clipboard API is refused (a page served over
 * plain HTTP to another host), through a selected textarea. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.append(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok;
  }
}
