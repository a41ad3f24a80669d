// One subscribed channel as the client knows it: its state at a seq, kept in seq
// order from a subscribe answer (a snapshot, or the events since a seq) and the
// event pushes after it (PROTOCOL.md §7–9); the latest tick; who watches. No I/O:
// the client (outatime.js) feeds it and asks it to recover when it reports a gap.

import { applyEvent } from "./kinds.js";

export class ChannelMirror {
  constructor(name) {
    this.name = name;
    this.kind = name.split("/")[0];
    this.seq = null;          // the seq of `state`; null until the first snapshot
    this.state = null;
    this.watchers = [];       // [{session, name}]
    this.watcherCount = 0;
    this.tick = null;         // the latest tick since the last event, or null
    this.tickAt = 0;          // performance.now() when it arrived
    this.stateAt = 0;         // performance.now() when `state` was last set or changed
    this.syncing = false;     // a (re)subscribe is in flight: pushes are covered by its answer
    this.failure = null;      // the error of the last subscribe, if it failed
    this.recovered = null;    // after a subscribe with since: {since, events: n, or null for a new state}
    this.lastEvent = null;
  }

  /** A subscribe result: the state, or (asked with `since`) the events that follow it. */
  takeSubscribeResult(result, since) {
    this.failure = null;
    this.kind = result.kind;
    this.watchers = result.watchers || [];
    this.watcherCount = result.watcher_count ?? this.watchers.length;
    if (result.recovered === true) {
      for (const ev of result.events || []) this.apply(ev);
      this.recovered = { since, events: (result.events || []).length };
    } else {
      this.state = result.state;
      this.recovered = since !== undefined ? { since, events: null } : null;
    }
    this.seq = result.seq;
    this.tick = null;
    this.stateAt = performance.now();
    this.syncing = false;
  }

  /** An event push: "applied", "ignored" (already held, or a subscribe answer will cover it) or "gap". */
  takeEvent(push) {
    if (this.syncing || this.seq === null || push.seq <= this.seq) return "ignored";
    if (push.seq > this.seq + 1) return "gap";
    this.apply(push);
    this.tick = null;  // a tick describes the state before this event (PROTOCOL.md §7)
    this.stateAt = performance.now();
    return "applied";
  }

  /** A tick push; false when there is no state to show it on yet. */
  takeTick(data) {
    if (this.syncing || this.state === null) return false;
    this.tick = data || {};
    this.tickAt = performance.now();
    return true;
  }

  /** A presence push: who joined and who left. */
  takePresence(push) {
    const left = new Set((push.left || []).map((w) => w.session));
    this.watchers = this.watchers.filter((w) => !left.has(w.session)).concat(push.joined || []);
    this.watcherCount = push.watcher_count ?? this.watchers.length;
  }

  apply(ev) {
    this.state = applyEvent(this.kind, this.state, ev.event, ev.data || {}, ev.at);
    this.seq = ev.seq;
    this.lastEvent = { seq: ev.seq, event: ev.event, at: ev.at };
  }
}
