// OutaTime protocol client for browsers: one WebSocket to ws(s)://<page host>/ws,
// one text message per protocol frame body (protocol/PROTOCOL.md §1, "WebSocket
// (GET /ws)"). It says hello, numbers requests, keeps each subscribed channel's
// state in seq order (channels.js; it recovers gaps and reconnects with `since`), pings after
// silence and takes a silent link for dead, reconnects with jittered exponential
// backoff, and stops for good on the `bye`s that say not to come back.
//
// Events (EventTarget): "status" {state, detail}, "ready" {hello}, "channel"
// {channel} (its state, seq or watchers changed), "tick" {channel, data},
// "message" {push}, "dropped" {push}, "problem" {code, message}, "bye" {reason}.

import { ChannelMirror } from "./channels.js";

export { ChannelMirror };

/** Protocol version this client speaks. */
export const PROTOCOL = 1;

/** `bye` reasons after which reconnecting cannot help (PROTOCOL.md §7). */
const FINAL_BYES = new Set(["unauthorized", "replaced", "unsupported_protocol"]);

/** Reconnect backoff: first pause, cap, and the longer one after `server_busy`. */
const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 10_000;
const BUSY_PAUSE_MS = 5_000;

/** A WebSocket handshake that takes longer is given up (and retried). */
const OPEN_TIMEOUT_MS = 10_000;

/** A request that has no answer within this long fails (the link is probed meanwhile). */
const REQUEST_TIMEOUT_MS = 15_000;

export class OutaTimeClient extends EventTarget {
  /**
   * @param {object} options
   * @param {string} options.url       ws:// or wss:// URL of the server's /ws
   * @param {string} [options.token]   sent only in `hello`
   * @param {string} [options.name]    display name for presence
   */
  constructor({ url, token = null, name = null, client = "outatime-web/1" }) {
    super();
    this.url = url;
    this.token = token;
    this.name = name;
    this.clientName = client;
    this.channels = new Map();        // name → ChannelMirror
    this.hello = null;                // the hello result of the current connection
    this.state = "idle";
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map();         // id → {resolve, reject, timer, sentAt}
    this.attempt = 0;
    this.retryTimer = null;
    this.probeTimer = null;
    this.resumeKey = null;
    this.lastHeard = 0;
    this.lastSent = 0;
    this.probeSentAt = null;
    this.rttMs = null;
    this.stopped = true;
  }

  /** Connects, and keeps connecting until `stop()` or a final `bye`. */
  start() {
    this.stopped = false;
    this.connect();
  }

  /** Closes and stops reconnecting. */
  stop(state = "stopped", detail = "") {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.teardown();
    this.setStatus(state, detail);
  }

  get role() { return this.hello ? this.hello.role : null; }
  get ready() { return this.state === "ready"; }

  setStatus(state, detail = "") {
    this.state = state;
    this.dispatchEvent(new CustomEvent("status", { detail: { state, detail } }));
  }

  problem(code, message) {
    this.dispatchEvent(new CustomEvent("problem", { detail: { code, message } }));
  }

  connect() {
    if (this.stopped) return;
    this.setStatus(this.attempt === 0 ? "connecting" : "reconnecting", this.attempt ? `attempt ${this.attempt + 1}` : "");
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch (error) {
      this.problem("connect_failed", `cannot open ${this.url}: ${error.message}`);
      return this.scheduleReconnect();
    }
    this.ws = ws;
    let opened = false;
    // A handshake that hangs (a server that accepts and never answers) is given up like a refused one.
    const openTimer = setTimeout(() => {
      if (opened || this.ws !== ws) return;
      this.problem("connect_failed", `no answer from ${this.url} within ${OPEN_TIMEOUT_MS / 1000} s`);
      this.teardown();
      this.scheduleReconnect();
    }, OPEN_TIMEOUT_MS);
    ws.onopen = () => {
      clearTimeout(openTimer);
      opened = true;
      this.lastHeard = performance.now();
      this.sayHello();
    };
    ws.onmessage = (message) => this.receive(message.data);
    ws.onerror = () => {
      // The browser hides why (a refused handshake, e.g. 403 for a foreign Origin, looks like any failure).
      if (!opened) this.problem("connect_failed", `could not open ${this.url} (server down, or it refused this page)`);
    };
    ws.onclose = (close) => {
      clearTimeout(openTimer);
      if (this.ws !== ws) return;
      this.teardown();
      if (this.stopped) return;
      if (opened && close.reason && close.code !== 1000) this.problem("closed", `connection closed: ${close.code} ${close.reason}`);
      this.scheduleReconnect();
    };
  }

  /** Drops the socket, its timers and the requests waiting on it. */
  teardown() {
    clearInterval(this.probeTimer);
    this.probeTimer = null;
    const ws = this.ws;
    this.ws = null;
    this.hello = null;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onerror = ws.onclose = null;
      try { ws.close(1000); } catch (_) { /* already closing */ }
    }
    for (const [, waiter] of this.pending) {
      clearTimeout(waiter.timer);
      waiter.reject(Object.assign(new Error("the connection closed before the answer"), { code: "connection_closed" }));
    }
    this.pending.clear();
    this.probeSentAt = null;
  }

  scheduleReconnect(minimum = 0) {
    if (this.stopped) return;
    clearTimeout(this.retryTimer);
    // Full jitter on an exponential ceiling: a restarted server is not met by every board at once.
    const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** this.attempt);
    const delay = Math.max(minimum, ceiling / 2 + Math.random() * ceiling / 2);
    this.attempt += 1;
    this.setStatus("reconnecting", `in ${(delay / 1000).toFixed(1)} s`);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  send(body) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(body));
    this.lastSent = performance.now();
    return true;
  }

  /**
   * Sends a request and resolves with its result; rejects with an Error carrying `code`.
   * Requests wait for the connection's hello (except hello itself).
   */
  request(type, fields = {}) {
    return new Promise((resolve, reject) => {
      if (!this.ws || (type !== "hello" && !this.ready)) {
        return reject(Object.assign(new Error("not connected"), { code: "not_connected" }));
      }
      const id = this.nextId++;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(Object.assign(new Error(`no answer to ${type} within ${REQUEST_TIMEOUT_MS / 1000} s`), { code: "timeout" }));
      }, REQUEST_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer, sentAt: performance.now(), type });
      this.send({ type, id, ...fields });
    });
  }

  async sayHello() {
    const fields = { protocol: PROTOCOL, client: this.clientName };
    if (this.name) fields.name = this.name;
    if (this.token) fields.token = this.token;
    if (this.resumeKey) fields.resume = this.resumeKey;
    let hello;
    try {
      hello = await this.request("hello", fields);
    } catch (error) {
      if (error.code === "unauthorized") this.stop("unauthorized", error.message);
      else if (error.code === "unsupported_protocol") this.stop("failed", error.message);
      else if (error.code !== "connection_closed") this.problem(error.code, error.message);
      return;
    }
    this.hello = hello;
    this.resumeKey = hello.resume_key || null;
    this.attempt = 0;
    this.startProbing(hello.heartbeat_ms || 15_000);
    this.setStatus("ready", hello.role);
    this.dispatchEvent(new CustomEvent("ready", { detail: { hello } }));
    for (const mirror of this.channels.values()) this.resync(mirror);
  }

  /**
   * Liveness both ways: the server wants a frame every heartbeat_ms; this side
   * pings after a second of silence and takes the link for dead when nothing at
   * all answers within max(2 s, 4 × RTT) of that ping (as the Python client does).
   */
  startProbing(heartbeatMs) {
    clearInterval(this.probeTimer);
    this.probeTimer = setInterval(() => {
      const now = performance.now();
      if (this.probeSentAt !== null) {
        const limit = Math.max(2_000, 4 * (this.rttMs || 0) + 200);
        if (this.lastHeard < this.probeSentAt && now - this.probeSentAt > limit) {
          this.problem("link_dead", `no answer from the server for ${((now - this.lastHeard) / 1000).toFixed(1)} s; reconnecting`);
          this.teardown();
          return this.scheduleReconnect();
        }
        if (this.lastHeard >= this.probeSentAt) this.probeSentAt = null;
      }
      const silent = now - this.lastHeard > 1_000;
      const quiet = now - this.lastSent > heartbeatMs / 3;
      if ((silent || quiet) && this.probeSentAt === null) {
        this.probeSentAt = now;
        this.request("ping").catch(() => {});
      }
    }, 500);
  }

  receive(text) {
    this.lastHeard = performance.now();
    let frame;
    try {
      frame = JSON.parse(text);
    } catch (error) {
      return this.problem("bad_json", `the server sent a frame that is not JSON: ${error.message}`);
    }
    if (!frame || typeof frame.type !== "string") return;
    switch (frame.type) {
      case "reply": return this.answer(frame);
      case "event": return this.onEvent(frame);
      case "tick": return this.onTick(frame);
      case "presence": return this.onPresence(frame);
      case "message":
      case "dropped":
        return this.dispatchEvent(new CustomEvent(frame.type, { detail: { push: frame } }));
      case "error":
        return this.problem(frame.error?.code || "error", frame.error?.message || "");
      case "bye": return this.onBye(frame.reason || "");
      default: return; // unknown pushes are ignored (PROTOCOL.md §1)
    }
  }

  answer(frame) {
    const waiter = this.pending.get(frame.id);
    if (!waiter) return;
    this.pending.delete(frame.id);
    clearTimeout(waiter.timer);
    if (waiter.type === "ping" || waiter.type === "hello") {
      const sample = performance.now() - waiter.sentAt;
      this.rttMs = this.rttMs === null ? sample : 0.875 * this.rttMs + 0.125 * sample;
    }
    if (frame.ok) waiter.resolve(frame.result);
    else waiter.reject(Object.assign(new Error(frame.error?.message || "failed"), { code: frame.error?.code || "error" }));
  }

  onBye(reason) {
    this.dispatchEvent(new CustomEvent("bye", { detail: { reason } }));
    if (FINAL_BYES.has(reason)) {
      const text = {
        unauthorized: "unauthorized: the server refused this token",
        replaced: "replaced: a newer connection took over this session",
        unsupported_protocol: "the server does not speak protocol 1",
      }[reason];
      return this.stop(reason === "unauthorized" ? "unauthorized" : "failed", text);
    }
    this.teardown();
    this.scheduleReconnect(reason === "server_busy" ? BUSY_PAUSE_MS : 0);
  }

  /** Subscribes (or re-subscribes) to `name`; the mirror fills in when the answer comes. */
  watch(name) {
    let mirror = this.channels.get(name);
    if (!mirror) {
      mirror = new ChannelMirror(name);
      this.channels.set(name, mirror);
    }
    if (this.ready) this.resync(mirror);
    return mirror;
  }

  /** Unsubscribes and forgets `name`. */
  unwatch(name) {
    if (!this.channels.delete(name)) return;
    if (this.ready) this.request("unsubscribe", { channel: name }).catch(() => {});
  }

  /** Subscribes with `since` when a state is held: only what was missed comes back. */
  async resync(mirror) {
    mirror.syncing = true;
    const fields = { channel: mirror.name };
    if (mirror.seq !== null) fields.since = mirror.seq;
    let result;
    try {
      result = await this.request("subscribe", fields);
    } catch (error) {
      mirror.syncing = false;
      if (error.code === "connection_closed" || error.code === "not_connected") return;
      mirror.failure = error;
      this.dispatchEvent(new CustomEvent("channel", { detail: { channel: mirror } }));
      return this.problem(error.code, `${mirror.name}: ${error.message}`);
    }
    if (this.channels.get(mirror.name) !== mirror) return;
    mirror.takeSubscribeResult(result, fields.since);
    this.dispatchEvent(new CustomEvent("channel", { detail: { channel: mirror, resynced: true } }));
  }

  onEvent(push) {
    const mirror = this.channels.get(push.channel);
    if (!mirror) return;
    const outcome = mirror.takeEvent(push);
    if (outcome === "gap") {
      // Events were missed. Fetch them (or a fresh state); pushes wait for that answer.
      this.problem("gap", `${mirror.name}: expected seq ${mirror.seq + 1}, got ${push.seq}; recovering`);
      return this.resync(mirror);
    }
    if (outcome === "applied") this.dispatchEvent(new CustomEvent("channel", { detail: { channel: mirror, event: push } }));
  }

  onTick(push) {
    const mirror = this.channels.get(push.channel);
    if (mirror?.takeTick(push.data)) this.dispatchEvent(new CustomEvent("tick", { detail: { channel: mirror, data: mirror.tick } }));
  }

  onPresence(push) {
    const mirror = this.channels.get(push.channel);
    if (!mirror) return;
    mirror.takePresence(push);
    this.dispatchEvent(new CustomEvent("channel", { detail: { channel: mirror, presence: push } }));
  }
}

/** The WebSocket URL of the page's own server. */
export function pageSocketURL(location = window.location) {
  return `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/ws`;
}
