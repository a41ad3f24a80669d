// starport/<board>: a departures board (seed 002) — ship, route, departure,
// arrival, duration and status of every dispatch, the active ones first.

import { el, clear, setText, shortTime } from "../dom.js";
import { View } from "./view.js";

const MODELS = ["SWingV1", "SWingV2", "SWingV3", "TearDrop"];
const ORDER = { in_flight: 0, scheduled: 1, arrived: 2, cancelled: 3 };
const WORDS = { scheduled: "SCHEDULED", in_flight: "IN FLIGHT", arrived: "ARRIVED", cancelled: "CANCELLED" };
/** Rows drawn at most: a board of thousands shows its most relevant ones and a count. */
const MAX_ROWS = 60;

export class StarportView extends View {
  constructor(root, ctx) {
    super(root, ctx);
    this.body = el("tbody");
    this.more = el("p", { class: "more" });
    this.summary = el("div", { class: "summary" });
    const table = el("table", { class: "departures" },
      el("thead", {}, el("tr", {}, ...["#", "SHIP", "ROUTE", "DEPARTS", "ARRIVES", "HOURS", "STATUS", "NOTE"].map((h) => el("th", {}, h)))),
      this.body);
    this.quoteOut = el("output", { class: "quote" });

    const model = () => el("label", {}, el("span", {}, "Ship"),
      el("select", { name: "model" }, ...MODELS.map((m) => el("option", { value: m, selected: m === "SWingV2" }, m))));
    const path = () => this.field("Route", { name: "path", required: true, placeholder: "A-C", maxlength: 200, spellcheck: "false" });
    const dispatch = this.form("Dispatch", [model(), path(),
      this.field("Departs (UTC, empty: now)", { name: "departs_at", type: "datetime-local", step: "1" }),
      this.field("Note", { name: "note", maxlength: 100 })], "DISPATCH", (v) => {
      const args = { model: v.model, path: v.path };
      if (v.departs_at) args.departs_at = `${v.departs_at.length === 16 ? v.departs_at + ":00" : v.departs_at}Z`;
      if (v.note) args.note = v.note;
      return ctx.command("dispatch", args);
    });
    const quote = this.form("Quote", [model(), path(), this.quoteOut], "QUOTE", async (v) => {
      const q = await ctx.command("quote", { model: v.model, path: v.path });
      if (q) this.quoteOut.textContent = `${q.path}: ${q.distance_km.toLocaleString("en")} km, ${q.duration_h} h `
        + `(${(q.flight_s / 3600).toFixed(2)} h flight + ${(q.docking_s / 3600).toFixed(2)} h docking)`;
      return null;
    }, { needs: "watch" });
    const cancel = this.form("Cancel", [this.field("Dispatch #", { name: "id", type: "number", min: 1, required: true })],
      "CANCEL", (v) => ctx.command("cancel", { id: Number(v.id) }));
    root.append(el("div", { class: "starport" }, this.summary, table, this.more), this.controls(dispatch, quote, cancel));
  }

  render(m) {
    this.clearFailure();
    const all = m.state.dispatches || [];
    const counts = { scheduled: 0, in_flight: 0, arrived: 0, cancelled: 0 };
    for (const d of all) counts[d.status] = (counts[d.status] || 0) + 1;
    clear(this.summary);
    for (const status of ["in_flight", "scheduled", "arrived", "cancelled"]) {
      this.summary.append(el("span", { class: `pill ${status}` }, `${counts[status]} ${WORDS[status]}`));
    }
    // In flight, then scheduled by departure, then the finished ones newest first.
    const shown = all.slice().sort((a, b) => (ORDER[a.status] - ORDER[b.status])
      || (ORDER[a.status] < 2 ? a.departs_at.localeCompare(b.departs_at) : b.arrives_at.localeCompare(a.arrives_at))
      || a.id - b.id).slice(0, MAX_ROWS);
    clear(this.body);
    if (all.length === 0) {
      this.body.append(el("tr", { class: "empty" }, el("td", { colspan: 8 }, "No departures yet")));
    }
    for (const d of shown) {
      this.body.append(el("tr", { class: d.status, "data-id": d.id },
        el("td", { class: "num" }, d.id),
        el("td", {}, d.model),
        el("td", { class: "route" }, d.path.split("").join(" → ")),
        el("td", { class: "num" }, shortTime(d.departs_at)),
        el("td", { class: "num" }, shortTime(d.arrives_at)),
        el("td", { class: "num" }, (d.duration_s / 3600).toFixed(2)),
        el("td", {}, el("span", { class: `badge ${d.status}` }, WORDS[d.status] || d.status)),
        el("td", { class: "note" }, d.note || "", d.created_by ? el("small", {}, ` — ${d.created_by}`) : "")));
    }
    setText(this.more, all.length > MAX_ROWS ? `+ ${all.length - MAX_ROWS} more (finished ones last)` : "");
  }
}
