// laps/<session>: the jogger's stopwatch (seed 004) — lap number, lap time and
// total time in large numerals, the laps table with average, best and worst.
// While running, the times run on the local clock from the last tick or event.

import { el, clear, setText, stopwatch } from "../dom.js";
import { View } from "./view.js";

/** Laps drawn at most (the newest). */
const MAX_ROWS = 40;

export class LapsView extends View {
  constructor(root, ctx) {
    super(root, ctx);
    this.lapNumber = el("div", { class: "big lap-number", id: "lap-number" }, "0");
    this.lapTime = el("div", { class: "big lap-time", id: "lap-time" }, stopwatch(0));
    this.total = el("div", { class: "big total", id: "lap-total" }, stopwatch(0));
    this.status = el("div", { class: "status" }, "IDLE");
    this.stats = el("div", { class: "lap-stats" });
    this.body = el("tbody");
    const face = el("div", { class: "lapclock" },
      el("div", { class: "lc-lap" }, el("small", {}, "LAP"), this.lapNumber),
      el("div", { class: "lc-total" }, el("small", {}, "TOTAL"), this.total),
      el("div", { class: "lc-time" }, el("small", {}, "LAP TIME"), this.lapTime, this.status));
    const table = el("table", { class: "laps" },
      el("thead", {}, el("tr", {}, el("th", {}, "LAP"), el("th", {}, "TIME"), el("th", {}, "VS AVERAGE"))), this.body);
    this.startStop = this.form("Stopwatch", [], "START", () => this.ctx.command(this.running ? "stop" : "start", {}));
    this.lapForm = this.form("New lap", [], "NEW LAP", () => ctx.command("lap", {}));
    this.resetForm = this.form("Reset", [], "RESET", () => ctx.command("reset", {}));
    root.append(el("div", { class: "laps-board" }, face, el("div", { class: "lap-list" }, this.stats, table)),
      this.controls(this.startStop, this.lapForm, this.resetForm));
    this.running = false;
    this.base = null;
    this.frame = setInterval(() => this.extrapolate(), 100);
  }

  destroy() {
    clearInterval(this.frame);
    super.destroy();
  }

  render(m) {
    this.clearFailure();
    const s = m.state;
    this.running = s.status === "running";
    this.base = { lap: s.lap_elapsed_ms, total: s.total_elapsed_ms, at: m.stateAt || performance.now() };
    if (m.tick) this.tick(m, false);
    setText(this.lapNumber, String(s.lap_number));
    setText(this.status, s.status.toUpperCase());
    this.root.dataset.status = s.status;
    setText(this.startStop.querySelector("button"), this.running ? "STOP" : "START");
    clear(this.stats);
    const stat = (label, ms) => el("span", {}, el("small", {}, label), ms === null || ms === undefined ? "—" : stopwatch(ms));
    this.stats.append(stat("AVERAGE", s.average_lap_ms), stat("BEST", s.best_lap_ms), stat("WORST", s.worst_lap_ms));
    clear(this.body);
    const laps = s.laps || [];
    if (laps.length === 0) this.body.append(el("tr", { class: "empty" }, el("td", { colspan: 3 }, "No laps yet")));
    for (const lap of laps.slice(-MAX_ROWS).reverse()) {
      const delta = s.average_lap_ms === null ? "" : lap.time_ms - s.average_lap_ms;
      this.body.append(el("tr", { class: lap.time_ms === s.best_lap_ms ? "best" : lap.time_ms === s.worst_lap_ms ? "worst" : "" },
        el("td", { class: "num" }, lap.lap), el("td", { class: "num" }, stopwatch(lap.time_ms)),
        el("td", { class: "num" }, delta === "" ? "" : `${delta >= 0 ? "+" : "−"}${(Math.abs(delta) / 1000).toFixed(1)} s`)));
    }
    this.extrapolate();
  }

  tick(m, draw = true) {
    const t = m.tick;
    if (!t || typeof t.lap_elapsed_ms !== "number") return;
    this.base = { lap: t.lap_elapsed_ms, total: t.total_elapsed_ms, at: m.tickAt };
    setText(this.lapNumber, String(t.lap_number));
    if (draw) this.extrapolate();
  }

  extrapolate() {
    if (!this.base) return;
    const run = this.running ? performance.now() - this.base.at : 0;
    setText(this.lapTime, stopwatch(this.base.lap + run));
    setText(this.total, stopwatch(this.base.total + run));
  }
}
