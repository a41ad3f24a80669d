// The board page: connects (outatime.js), shows one channel with its kind's view
// (views/*.js), presence, messages and errors, and sends the view's commands.
// The URL fragment says what to show: #channel=delorean/main (add &wall for a
// wall screen without forms); a link may also carry #token=…, which moves into
// sessionStorage (this tab only) and out of the address bar at once. Tokens are
// never put in a URL the page requests.

import { OutaTimeClient, pageSocketURL } from "./outatime.js";
import { KINDS } from "./kinds.js";
import { el, clear } from "./dom.js";
import { DeLoreanView } from "./views/delorean.js";
import { StarportView } from "./views/starport.js";
import { TimersView } from "./views/timers.js";
import { LapsView } from "./views/laps.js";

const VIEWS = { delorean: DeLoreanView, starport: StarportView, timers: TimersView, laps: LapsView };
const DEFAULT_CHANNEL = "delorean/main";
const TOKEN_KEY = "outatime.token";
const NAME_KEY = "outatime.name";
const MAX_MESSAGES = 50;
const MAX_PROBLEMS = 8;

const $ = (id) => document.getElementById(id);

/** Reads the fragment's `channel` and `token`; moves the token to sessionStorage. */
function readFragment() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  const token = params.get("token");
  if (token !== null) {
    sessionStorage.setItem(TOKEN_KEY, token);
    params.delete("token");
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
  }
  // #…&wall: a wall screen — the board, who watches and messages, without forms.
  document.body.dataset.wall = params.has("wall") ? "on" : "off";
  return params.get("channel") || DEFAULT_CHANNEL;
}

class Board {
  constructor() {
    this.channelName = readFragment();
    this.view = null;
    this.mirror = null;
    this.client = null;
    this.listTimer = null;
    window.addEventListener("hashchange", () => this.show(readFragment()));
    $("picker").addEventListener("submit", (e) => {
      e.preventDefault();
      const name = $("channel-input").value.trim();
      if (name) location.hash = `channel=${name}${document.body.dataset.wall === "on" ? "&wall" : ""}`;
    });
    $("say").addEventListener("submit", (e) => {
      e.preventDefault();
      const text = $("say-text").value.trim();
      if (!text) return;
      this.run(this.client.request("publish", { channel: this.channelName, data: { text } }), "message")
        .then((ok) => { if (ok) $("say-text").value = ""; });
    });
    $("login-form").addEventListener("submit", () => {
      const token = $("login-token").value;
      const name = $("login-name").value.trim();
      if (token) sessionStorage.setItem(TOKEN_KEY, token); else sessionStorage.removeItem(TOKEN_KEY);
      if (name) localStorage.setItem(NAME_KEY, name);
      this.connect();
    });
    this.connect();
  }

  connect() {
    if (this.client) this.client.stop();
    const client = new OutaTimeClient({
      url: pageSocketURL(),
      token: sessionStorage.getItem(TOKEN_KEY),
      name: localStorage.getItem(NAME_KEY) || "board",
    });
    this.client = client;
    window.outatime = client;  // for the console and the browser tests
    client.addEventListener("status", (e) => this.onStatus(e.detail));
    client.addEventListener("ready", () => { this.refreshList(); this.view?.reconnected?.(); this.applyRole(); });
    client.addEventListener("channel", (e) => { if (e.detail.channel === this.mirror) this.onChannel(e.detail); });
    client.addEventListener("tick", (e) => { if (e.detail.channel === this.mirror) this.view?.tick(this.mirror); });
    client.addEventListener("message", (e) => this.onMessage(e.detail.push));
    client.addEventListener("dropped", (e) => this.onDropped(e.detail.push));
    client.addEventListener("problem", (e) => this.addProblem(e.detail.code, e.detail.message));
    this.show(this.channelName, true);
    client.start();
  }

  /** Shows `name` (subscribing to it; unsubscribing from the one shown before). */
  show(name, force = false) {
    if (name === this.channelName && this.mirror && !force) return;
    if (this.mirror && this.mirror.name !== name) this.client.unwatch(this.mirror.name);
    this.channelName = name;
    $("channel-input").value = name;
    const kind = name.split("/")[0];
    const View = VIEWS[kind];
    this.view?.destroy();
    this.view = null;
    const board = $("board");
    clear(board);
    board.dataset.channel = name;
    board.dataset.seq = "";
    delete board.dataset.recovered;
    delete board.dataset.speed;
    clear($("watchers"));
    clear($("messages"));
    $("watcher-count").textContent = "0";
    $("title").textContent = name;
    document.title = `${name} · OutaTime`;
    if (!View) {
      this.mirror = null;
      board.append(el("p", { class: "placeholder" },
        `No board for '${name}': a channel is kind/name with a kind among ${KINDS.join(", ")}.`));
      return;
    }
    board.dataset.kind = kind;
    this.view = new View(board, {
      command: (action, args, label) => this.command(action, args, label),
      role: () => this.client.role,
      drawn: () => this.applyRole(),  // a view redrew its controls by itself
    });
    this.mirror = this.client.watch(name);
    this.onChannel({ channel: this.mirror });
    this.applyRole();
  }

  onStatus({ state, detail }) {
    const link = $("link");
    link.dataset.state = state;
    const words = {
      connecting: "connecting…", reconnecting: `reconnecting ${detail}`, ready: `live · ${detail}`,
      unauthorized: "unauthorized", stopped: "stopped", failed: detail || "failed",
    };
    $("link-text").textContent = words[state] || state;
    link.title = detail || state;
    document.body.dataset.link = state;
    if (state === "unauthorized") {
      this.addProblem("unauthorized", detail || "the server refused the token");
      this.askForToken("The server refused the token (unauthorized). Enter another one.");
    }
    this.applyRole();
  }

  askForToken(why) {
    $("login-why").textContent = why;
    $("login-token").value = "";
    $("login-name").value = localStorage.getItem(NAME_KEY) || "";
    if (!$("login").open) $("login").showModal();
  }

  /** Enables the forms the role may use: state-changing ones need `operate`. */
  applyRole() {
    const role = this.client?.role;
    const live = this.client?.ready;
    const operate = live && (role === "operate" || role === "admin");
    document.body.dataset.role = role || "none";
    for (const control of document.querySelectorAll("[data-needs] :is(input, select, button, textarea)")) {
      const needs = control.closest("[data-needs]").dataset.needs;
      // data-off: a control its item does not allow (e.g. START on a finished timer), whatever the role.
      control.disabled = (needs === "operate" ? !operate : !live) || control.dataset.off !== undefined;
    }
    for (const form of document.querySelectorAll("form[data-needs=operate]")) {
      form.title = operate ? "" : role === "watch" ? "Your token can only watch (role watch)" : "Not connected";
    }
  }

  onChannel({ channel, event, resynced }) {
    const m = channel;
    if (m.failure && m.state === null) {
      this.view?.showFailure(m.failure);
    } else if (m.state !== null) {
      this.view?.render(m, event);
    }
    $("watcher-count").textContent = String(m.watcherCount);
    const list = $("watchers");
    clear(list);
    const me = this.client.hello?.session;
    for (const w of m.watchers.slice(0, 30)) {
      list.append(el("li", { class: w.session === me ? "me" : "" }, w.name || "anonymous",
        w.session === me ? el("span", { class: "tag" }, " you") : ""));
    }
    if (m.watcherCount > 30) list.append(el("li", { class: "more" }, `+ ${m.watcherCount - 30} more`));
    const board = $("board");
    board.dataset.channel = m.name;
    board.dataset.seq = m.seq ?? "";
    $("title").textContent = m.seq === null ? m.name : `${m.name} · seq ${m.seq}`;
    if (resynced && m.recovered) {
      board.dataset.recovered = m.recovered.events === null ? "state" : `events:${m.recovered.events}`;
    }
    this.applyRole();
  }

  onMessage(push) {
    if (push.channel !== this.channelName) return;
    const data = push.data;
    const text = data && typeof data === "object" && typeof data.text === "string" ? data.text : JSON.stringify(data);
    this.addMessage(push.from?.name || "anonymous", text);
  }

  onDropped(push) {
    if (push.channel !== this.channelName) return;
    this.addMessage("—", `${push.messages} message(s) missed (the link was backed up)`);
  }

  addMessage(who, text) {
    const list = $("messages");
    const time = new Date().toISOString().slice(11, 19);
    list.prepend(el("li", {}, el("time", {}, time), el("b", {}, who), el("span", {}, text)));
    while (list.children.length > MAX_MESSAGES) list.lastChild.remove();
  }

  /** Shows an error; the same one again only counts up (a server down fails every reconnect alike). */
  addProblem(code, message) {
    const list = $("problems");
    const time = new Date().toISOString().slice(11, 19);
    const last = list.firstElementChild;
    if (last && last.dataset.code === code && last.dataset.message === message) {
      last.dataset.count = String(Number(last.dataset.count) + 1);
      last.querySelector("time").textContent = time;
      last.querySelector(".times").textContent = ` ×${last.dataset.count}`;
      return;
    }
    list.prepend(el("li", { "data-code": code, "data-message": message, "data-count": 1 },
      el("time", {}, time), el("code", {}, code), el("span", {}, message, el("b", { class: "times" }))));
    while (list.children.length > MAX_PROBLEMS) list.lastChild.remove();
  }

  /** Runs a command on the shown channel; errors go to the Errors panel. Resolves to the result or null. */
  command(action, args = {}, label = action) {
    return this.run(this.client.request("command", { channel: this.channelName, action, args }), label);
  }

  async run(promise, label) {
    try {
      return (await promise) ?? {};
    } catch (error) {
      this.addProblem(error.code || "error", `${label}: ${error.message}`);
      return null;
    }
  }

  /** Fills the picker from `list` (first pages only: a picker of thousands helps nobody). */
  async refreshList() {
    clearTimeout(this.listTimer);
    const names = [];
    let after;
    for (let page = 0; page < 3; page++) {
      let result;
      try {
        result = await this.client.request("list", after ? { after, limit: 1000 } : { limit: 1000 });
      } catch (_) { return; }
      for (const c of result.channels || []) names.push(c);
      if (!result.next) break;
      after = result.next;
    }
    const list = $("channel-list");
    clear(list);
    for (const c of names) list.append(el("option", { value: c.channel }, `${c.channel} (${c.watchers} watching)`));
    this.listTimer = setTimeout(() => this.refreshList(), 30_000);
  }
}

new Board();
