// What every kind's view shares: the failure notice and command forms.

import { el, clear } from "../dom.js";

export class View {
  constructor(root, ctx) {
    this.root = root;
    this.ctx = ctx;
    this.failure = null;
  }

  /** The channel could not be shown (e.g. it does not exist and this role may not create it). */
  showFailure(error) {
    if (!this.failure) {
      this.failure = el("p", { class: "failure", role: "alert" });
      this.root.prepend(this.failure);
    }
    this.failure.textContent = `Cannot show this channel: ${error.code} — ${error.message}`;
  }

  clearFailure() {
    this.failure?.remove();
    this.failure = null;
  }

  /**
   * A command form: `fields` are elements with `name`s; `submit(values)` returns
   * the command's promise. `needs` is the role the form needs ("operate" or "watch").
   */
  form(title, fields, button, submit, { needs = "operate", cls = "" } = {}) {
    const form = el("form", { class: `command ${cls}`, "data-needs": needs, autocomplete: "off" },
      el("h3", {}, title), el("div", { class: "row" }, ...fields, el("button", { type: "submit" }, button)));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const values = Object.fromEntries(new FormData(form).entries());
      const result = await submit(values, form);
      if (result && form.dataset.keep === undefined) form.reset();
    });
    return form;
  }

  /** A labelled input. */
  field(label, attrs) {
    return el("label", {}, el("span", {}, label), el("input", attrs));
  }

  /** The controls area below the board. */
  controls(...forms) {
    return el("section", { class: "controls", "aria-label": "Commands" }, ...forms);
  }

  tick() {}
  destroy() { clear(this.root); }
}
