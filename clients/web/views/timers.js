// timers/<list>: countdowns (seed 003). A running countdown is drawn from its
// last tick (or event, or snapshot) and the local clock since then, so it moves
// every second between the server's ticks; the server's values correct it.

import { el, clear, setText, clock } from "../dom.js";
import { View } from "./view.js";

/** Rows drawn at most (running ones first). */
const MAX_ROWS = 60;

export class TimersView extends View {
  constructor(root, ctx) {
    super(root, ctx);
    this.list = el("div", { class: "timers" });
    this.more = el("p", { class: "more" });
    this.rows = new Map();      // id → {row, remaining}
    this.base = new Map();      // id → {remaining_s, at: performance.now()} for running timers
    this.viewing = new Set();   // timers this page started (is a viewer of)
    const add = this.form("Add timer", [
      this.field("Event", { name: "event", required: true, maxlength: 100 }),
      this.field("Location", { name: "location", maxlength: 100 }),
      this.field("Minutes", { name: "minutes", type: "number", min: 0, step: "any", required: true, value: 10 })],
      "ADD", (v) => ctx.command("add", { event: v.event, location: v.location || "", remaining_s: Math.round(Number(v.minutes) * 60) }));
    root.append(el("div", {}, this.list, this.more), this.controls(add));
    this.frame = setInterval(() => this.extrapolate(), 250);
  }

  destroy() {
    clearInterval(this.frame);
    super.destroy();
  }

  render(m) {
    this.clearFailure();
    this.mirror = m;
    const now = performance.now();
    const timers = m.state.timers || [];
    // The state's remaining_s is as of the snapshot or the event that set it.
    this.base.clear();
    for (const t of timers) if (t.status === "running") this.base.set(t.id, { remaining_s: t.remaining_s, at: m.stateAt || now });
    if (m.tick) this.tick(m, false);
    const shown = timers.slice().sort((a, b) => (a.status === "running" ? 0 : 1) - (b.status === "running" ? 0 : 1)).slice(0, MAX_ROWS);
    clear(this.list);
    this.rows.clear();
    if (timers.length === 0) this.list.append(el("p", { class: "placeholder" }, "No timers on this list yet"));
    for (const t of shown) {
      const remaining = el("div", { class: "remaining" }, clock(t.remaining_s));
      const viewing = this.viewing.has(t.id) && t.status === "running";
      const row = el("article", { class: `timer ${t.status}`, "data-id": t.id },
        el("div", { class: "what" }, el("div", { class: "event" }, t.event), el("div", { class: "location" }, t.location || "")),
        remaining,
        el("div", { class: "state" }, t.status.toUpperCase(), t.status === "running" ? el("small", {}, ` · ${t.viewers || 1} viewing`) : ""),
        el("form", { class: "row-actions", "data-needs": "operate" },
          el("button", { type: "button", onclick: () => this.toggle(t, viewing), "data-off": t.status === "finished" },
            viewing ? "STOP" : "START"),
          el("button", { type: "button", class: "quiet", onclick: () => this.ctx.command("remove", { id: t.id }) }, "REMOVE")));
      this.list.append(row);
      this.rows.set(t.id, { row, remaining });
    }
    setText(this.more, timers.length > MAX_ROWS ? `+ ${timers.length - MAX_ROWS} more` : "");
    this.extrapolate();
  }

  /** A new connection views nothing (viewing ends with the connection, PROTOCOL.md §14.3). */
  reconnected() { this.viewing.clear(); }

  async toggle(t, viewing) {
    const result = await this.ctx.command(viewing ? "stop" : "start", { id: t.id });
    if (result) {
      if (viewing) this.viewing.delete(t.id); else this.viewing.add(t.id);
      // The event came before this reply and was drawn without knowing this page now views the timer.
      if (this.mirror) this.render(this.mirror);
      this.ctx.drawn();
    }
  }

  tick(m, draw = true) {
    const at = m.tickAt || performance.now();
    for (const { id, remaining_s } of m.tick?.timers || []) this.base.set(id, { remaining_s, at });
    if (draw) this.extrapolate();
  }

  extrapolate() {
    const now = performance.now();
    for (const [id, row] of this.rows) {  // only the drawn ones: a list of thousands draws 60
      const base = this.base.get(id);
      if (!base) continue;
      // Never shows 0 before the server's timer_finished: the last second waits for it.
      const left = Math.max(base.remaining_s > 0 ? 1 : 0, base.remaining_s - Math.floor((now - base.at) / 1000));
      setText(row.remaining, clock(left));
    }
  }
}
