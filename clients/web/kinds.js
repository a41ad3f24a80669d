// The four channel kinds' events applied to a state (PROTOCOL.md §14): every
// event carries absolute values, so applying a channel's events in seq order to
// the state at seq S − 1 gives the state at S. Pure functions, no DOM.

const reducers = {
  delorean(state, event, data) {
    switch (event) {
      case "destination_set": return { ...state, destination_time: data.destination_time };
      case "acceleration_started": return { ...state, status: "accelerating", speed_mph: 0 };
      case "time_travel":
        return { ...state, last_departed: data.last_departed, present_time: data.present_time,
                 speed_mph: data.speed_mph ?? 0, status: "parked" };
      case "acceleration_aborted": return { ...state, status: "parked", speed_mph: 0 };
      default: return state;
    }
  },

  starport(state, event, data) {
    const dispatches = state.dispatches || [];
    const setStatus = (id, status) => dispatches.map((d) => (d.id === id ? { ...d, status } : d));
    switch (event) {
      case "dispatched": return { ...state, dispatches: dispatches.concat([data.dispatch]) };
      case "cancelled": return { ...state, dispatches: setStatus(data.id, "cancelled") };
      case "status_changed": return { ...state, dispatches: setStatus(data.id, data.status) };
      default: return state;
    }
  },

  timers(state, event, data, at) {
    const timers = state.timers || [];
    const change = (id, f) => timers.map((t) => (t.id === id ? f(t) : t));
    switch (event) {
      case "timer_added": return { ...state, timers: timers.concat([data.timer]) };
      case "timer_updated": return { ...state, timers: change(data.timer.id, () => ({ ...data.timer })) };
      case "timer_removed": return { ...state, timers: timers.filter((t) => t.id !== data.id) };
      case "timer_started":
        return { ...state, timers: change(data.id, (t) => ({ ...t, status: "running", remaining_s: data.remaining_s,
                                                             viewers: Math.max(1, t.viewers || 0) })) };
      case "timer_stopped":
        return { ...state, timers: change(data.id, (t) => ({ ...t, status: "stopped", remaining_s: data.remaining_s, viewers: 0 })) };
      case "timer_finished":
        return { ...state, timers: change(data.id, (t) => ({ ...t, status: "finished", remaining_s: 0, viewers: 0 })) };
      default: return state;
    }
  },

  laps(state, event, data) {
    switch (event) {
      case "started":
        return { ...state, status: "running", running_since: data.running_since, lap_number: data.lap_number,
                 lap_elapsed_ms: data.lap_elapsed_ms, total_elapsed_ms: data.total_elapsed_ms,
                 elapsed_as_of: data.running_since };
      case "stopped": {
        const next = { ...state, status: "paused", lap_elapsed_ms: data.lap_elapsed_ms,
                       total_elapsed_ms: data.total_elapsed_ms, running_since: null };
        delete next.elapsed_as_of;
        return next;
      }
      case "lap_completed":
        return { ...state, laps: (state.laps || []).concat([{ lap: data.lap, time_ms: data.time_ms }]),
                 average_lap_ms: data.average_lap_ms, best_lap_ms: data.best_lap_ms, worst_lap_ms: data.worst_lap_ms,
                 lap_number: data.lap_number, total_elapsed_ms: data.total_elapsed_ms, lap_elapsed_ms: 0,
                 elapsed_as_of: data.completed_at };
      case "reset":
        return { status: "idle", lap_number: 0, lap_elapsed_ms: 0, total_elapsed_ms: 0, laps: [],
                 average_lap_ms: null, best_lap_ms: null, worst_lap_ms: null, running_since: null };
      default: return state;
    }
  },
};

/** The state after `event` (an unknown kind or event leaves it as it is). */
export function applyEvent(kind, state, event, data, at) {
  const reducer = reducers[kind];
  if (!reducer || state === null || state === undefined) return state;
  return reducer(state, event, data, at);
}

/** The four kinds, in the order the picker lists them. */
export const KINDS = ["delorean", "starport", "timers", "laps"];
