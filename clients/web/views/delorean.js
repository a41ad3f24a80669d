// delorean/<car>: the time circuits of seed 000 — DESTINATION TIME (red-orange),
// PRESENT TIME (green), LAST TIME DEPARTED (amber) — and the speed in MPH (red).

import { el, setText, circuitParts, circuitText } from "../dom.js";
import { View } from "./view.js";

const ROWS = [
  ["destination_time", "DESTINATION TIME", "destination"],
  ["present_time", "PRESENT TIME", "present"],
  ["last_departed", "LAST TIME DEPARTED", "departed"],
];
const CELLS = [["month", "MONTH"], ["day", "DAY"], ["year", "YEAR"], ["ampm", ""], ["hour", "HOUR"], ["minute", "MIN"]];

export class DeLoreanView extends View {
  constructor(root, ctx) {
    super(root, ctx);
    this.rows = {};
    const circuits = el("div", { class: "circuits" });
    for (const [key, label, tone] of ROWS) {
      const cells = {};
      const row = el("div", { class: `circuit ${tone}`, id: `circuit-${tone}`, "data-time": "" },
        ...CELLS.map(([part, caption]) => {
          cells[part] = el("span", { class: `digits ${part}` }, part === "ampm" ? "" : "--");
          return el("div", { class: `cell ${part}` }, el("small", {}, caption), cells[part]);
        }),
        el("div", { class: "caption" }, label));
      this.rows[key] = { row, cells };
      circuits.append(row);
    }
    this.speedNumber = el("span", { class: "speed-number" }, "0");
    this.speed = el("span", { class: "speed-value", id: "speed" }, this.speedNumber, el("span", { class: "mph" }, " MPH"));
    this.gauge = el("div", { class: "gauge" }, el("div", { class: "gauge-fill" }));
    this.status = el("div", { class: "status", id: "car-status" }, "PARKED");
    const speedo = el("div", { class: "speedo" }, el("small", {}, "CURRENT SPEED"), this.speed, this.gauge, this.status);

    const time = el("input", { name: "time", type: "datetime-local", step: "60", required: true, value: "1985-10-26T01:21" });
    this.destinationForm = this.form("Set destination time (UTC)", [el("label", {}, el("span", {}, "Destination"), time)],
      "SET DESTINATION TIME", (v) => ctx.command("set_destination", { time: `${v.time.length === 16 ? v.time + ":00" : v.time}Z` }));
    this.destinationForm.dataset.keep = "";
    this.travelForm = this.form("Travel", [], "TRAVEL", () => ctx.command("travel", {}));
    root.append(el("div", { class: "delorean" }, circuits, speedo), this.controls(this.destinationForm, this.travelForm));
  }

  render(m) {
    this.clearFailure();
    const s = m.state;
    for (const [key] of ROWS) {
      const { row, cells } = this.rows[key];
      const parts = circuitParts(s[key]);
      row.dataset.time = s[key] || "";
      row.title = circuitText(s[key]);
      for (const [part] of CELLS) setText(cells[part], parts ? parts[part] : part === "ampm" ? "" : "--");
      row.classList.toggle("empty", !parts);
    }
    this.showSpeed(m);
  }

  tick(m) { this.showSpeed(m); }

  showSpeed(m) {
    const s = m.state;
    const speed = s.status === "accelerating" && m.tick && typeof m.tick.speed_mph === "number" ? m.tick.speed_mph : s.speed_mph;
    setText(this.speedNumber, String(speed));
    this.gauge.style.setProperty("--speed", String(speed / 88));
    this.root.dataset.speed = String(speed);
    setText(this.status, s.status === "accelerating" ? (speed >= 88 ? "88 MPH — TIME TRAVEL" : "ACCELERATING") : "PARKED");
    this.status.dataset.status = s.status;
  }
}
