import ArgumentParser

/// What a commands client sends (`--workload`): each one durable event per
/// command, on the client's own channel.
enum CommandsWorkload: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// The lap stopwatch cycle start → lap → lap → stop → reset (`laps/…`).
    case laps
    /// `add` a timer to the client's list (`timers/…`).
    case timerAdd = "timer-add"
    /// `update` the list's timers round-robin, a new event text each time (`timers/…`).
    case timerUpdate = "timer-update"
    /// `dispatch` a ship departing far in the future (`starport/…`), so nothing departs during the run.
    case dispatch

    /// A valid stopwatch cycle from idle: every action is one durable event.
    /// The server runs a connection's commands in request order, so a
    /// pipelined cycle stays valid.
    static let cycle = ["start", "lap", "lap", "stop", "reset"]

    /// `laps, timer-add, timer-update, dispatch`, for messages.
    static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// The channel kind the workload drives.
    var kind: String {
        switch self {
        case .laps: "laps"
        case .timerAdd, .timerUpdate: "timers"
        case .dispatch: "starport"
        }
    }

    /// Whether `--preload` has something to fill: timers or dispatches.
    var preloads: Bool { self != .laps }

    /// Remaining time of every timer added: a day, so none finishes (they never run anyway: nobody views them).
    static let remaining = 86_400
    /// Departure of every dispatch: far enough that no `status_changed` falls in a run.
    static let departsAt = "2099-01-01T00:00:00Z"

    /// The measured command number `step` (0, 1, 2, … per client) as a frame body.
    /// `preloaded` is the number of timers the preload added (ids 1…preloaded):
    /// `timer-update` cycles through them.
    func body(id: Int, channel: String, step: Int, preloaded: Int) -> String {
        switch self {
        case .laps:
            return #"{"type":"command","id":\#(id),"channel":"\#(channel)","action":"\#(Self.cycle[step % Self.cycle.count])"}"#
        case .timerAdd:
            return Self.addTimer(id: id, channel: channel, text: "load \(step)")
        case .timerUpdate:
            let timer = step % max(1, preloaded) + 1
            return #"{"type":"command","id":\#(id),"channel":"\#(channel)","action":"update","args":{"id":\#(timer),"event":"load update \#(step)"}}"#
        case .dispatch:
            return Self.dispatch(id: id, channel: channel, note: "load \(step)")
        }
    }

    /// Preload item number `index` (0-based) as a frame body: a timer added,
    /// or a dispatch. Only for workloads that ``preloads``.
    func preloadBody(id: Int, channel: String, index: Int) -> String {
        switch self {
        case .dispatch: Self.dispatch(id: id, channel: channel, note: "preload \(index)")
        case .laps, .timerAdd, .timerUpdate: Self.addTimer(id: id, channel: channel, text: "preload \(index)")
        }
    }

    private static func addTimer(id: Int, channel: String, text: String) -> String {
        #"{"type":"command","id":\#(id),"channel":"\#(channel)","action":"add","args":{"event":"\#(text)","remaining_s":\#(remaining)}}"#
    }

    private static func dispatch(id: Int, channel: String, note: String) -> String {
        #"{"type":"command","id":\#(id),"channel":"\#(channel)","action":"dispatch","args":{"model":"SWingV2","path":"AC","departs_at":"\#(departsAt)","note":"\#(note)"}}"#
    }
}

/// When a pipelining client sends its next commands (`--refill`).
enum CommandsRefill: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// One more per reply: `--pipeline` commands are always in flight.
    case window
    /// All `--pipeline` again once every reply of the previous burst is in,
    /// as `redis-benchmark -P` does.
    case burst
}
