// `outatime watch --jsonl`: what the board shows, for scripts (the WAN
// trials, tools/wan_trials.py). One JSON object a line, written when it
// changes. Every object has:
//   "type"     what it reports (below)
//   "mono_ms"  the loop's monotonic clock in ms (arbitrary origin: subtract two)
//   "wall"     the wall clock, "2026-11-28T01:30:00.123Z"
// Types:
//   {"type":"connection","state":"connecting"|"connected"|"reconnecting"|"recovered"|"closed",
//    "attempt":N, "delay_ms":N              (reconnecting: the attempt and its backoff delay)
//    "reason":TEXT, "reason_code":CODE,     (reconnecting, recovered, closed: why the link dropped;
//    "silence_ms":N,                         CODE is DisconnectReason.code: "bye:slow_consumer",
//                                            "unresponsive", "end_of_stream", "io_error", …;
//                                            silence_ms: time since the last frame when it dropped)
//    "last_try":TEXT, "last_try_code":CODE}  (reconnecting from attempt 2 on: why the latest attempt
//                                            failed, when not for the same reason: "bye:server_busy",
//                                            "connect_failed", …)
//   {"type":"sync","channel":C,"method":"snapshot"|"recovered"|"reloaded","events":N,"seq":S}
//   {"type":"event","channel":C,"seq":S,"event":NAME,"replayed":BOOL}   (each event applied, in seq order)
//   {"type":"link","live":BOOL,"age_ms":N,"why":WHY}                   (the connection's verdict changed)
//   {"type":"freshness","channel":C,"live":BOOL,"age_ms":N,"why":WHY}  (a panel turned stale or live again)
//      WHY: "disconnected", "silent_link", "ticks_late"; age_ms and why only when not live;
//      age_ms is the age of the data shown: for a list, since the server's `at` of the tick
//      shown (its age on arrival counts: "ticks_late" also when ticks come regularly but late)
//   {"type":"shown","channel":C,"seq":S,"live":BOOL,"values":{…}}      (after each event, tick and sync of C)
//      values: delorean {speed_mph, status, present_time, destination_time}
//              timers   {running, timers: [{id, remaining_s, status}] (the first 20 rows)}
//              laps     {status, lap_number, lap_elapsed_ms, total_elapsed_ms, laps}
//              starport {dispatches}
//   {"type":"error","message":TEXT}
// Objects of new types may be added; readers ignore types they do not know.

import Foundation
import OutaTimeClient
import OutaTimeProtocol

/// The `--jsonl` objects (format above).
enum WatchJSONL {
    /// One line: `fields` with `type`, `mono_ms` and `wall`.
    static func line(_ type: String, monoMs: UInt64, wall: Date, _ fields: [String: JSONValue]) -> String {
        var object = fields
        object["type"] = .string(type)
        object["mono_ms"] = .int(Int64(monoMs))
        object["wall"] = .string(ISOTime.format(milliseconds: Int64((wall.timeIntervalSince1970 * 1000).rounded(.down))))
        return Output.jsonLine(JSONValue.object(object))
    }

    /// A `connection` object's fields; `drop` is why the link last dropped.
    static func connection(_ state: ConnectionState, recovered: Bool,
                           drop: (reason: DisconnectReason, silenceMs: UInt64?)?,
                           lastTry: DisconnectReason? = nil) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        switch state {
        case .idle, .connecting: fields["state"] = .string("connecting")
        case .ready: fields["state"] = .string(recovered ? "recovered" : "connected")
        case .reconnecting(let attempt, let delay):
            fields["state"] = .string("reconnecting")
            fields["attempt"] = .int(Int64(attempt))
            fields["delay_ms"] = .int(Int64(delay))
        case .closed: fields["state"] = .string("closed")
        }
        var reason = drop
        if case .closed(let why?) = state { reason = (why, drop?.silenceMs) }
        if case .closed(nil) = state { reason = nil }
        if let reason, state != .connecting {
            fields["reason"] = .string(reason.reason.explanation(silenceMs: reason.silenceMs))
            fields["reason_code"] = .string(reason.reason.code)
            if let silence = reason.silenceMs { fields["silence_ms"] = .int(Int64(silence)) }
        }
        if let lastTry {
            fields["last_try"] = .string(lastTry.explanation())
            fields["last_try_code"] = .string(lastTry.code)
        }
        return fields
    }

    static func sync(_ sync: ChannelSync) -> [String: JSONValue] {
        var fields: [String: JSONValue] = ["channel": .string(sync.channel), "seq": .int(sync.seq), "events": .int(0)]
        switch sync.method {
        case .snapshot: fields["method"] = .string("snapshot")
        case .reloaded: fields["method"] = .string("reloaded")
        case .recovered(let events):
            fields["method"] = .string("recovered")
            fields["events"] = .int(Int64(events))
        }
        return fields
    }

    static func event(_ event: ChannelEvent) -> [String: JSONValue] {
        ["channel": .string(event.channel), "seq": .int(event.seq), "event": .string(event.event),
         "replayed": .bool(event.replayed)]
    }

    /// `live`, and `age_ms` and `why` when stale.
    static func verdict(_ freshness: Freshness) -> [String: JSONValue] {
        guard case .stale(let age, let why) = freshness else { return ["live": .bool(true)] }
        return ["live": .bool(false), "age_ms": .int(Int64(age)), "why": .string(why.rawValue)]
    }

    /// The values the board shows for `mirror`'s channel at `now`.
    static func shown(_ mirror: ChannelMirror, at now: Date) -> JSONValue {
        guard let state = mirror.snapshot(at: now) else { return .null }
        switch WatchBoard.kind(mirror.channel) {
        case "delorean":
            return .object(["speed_mph": .int(Int64(WatchRender.deloreanSpeed(state, tick: mirror.lastTick))),
                            "status": state["status"] ?? .null, "present_time": state["present_time"] ?? .null,
                            "destination_time": state["destination_time"] ?? .null])
        case "timers":
            let rows = state["timers"]?.array ?? []
            var ticked: [Int: Int] = [:]
            for entry in mirror.lastTick?["timers"]?.array ?? [] {
                ticked[WatchFormat.int(entry["id"])] = WatchFormat.int(entry["remaining_s"])
            }
            let shown: [JSONValue] = rows.prefix(20).map { row in
                let id = WatchFormat.int(row["id"])
                let running = row["status"]?.text == "running"
                let remaining = running ? (ticked[id] ?? WatchFormat.int(row["remaining_s"])) : WatchFormat.int(row["remaining_s"])
                return .object(["id": .int(Int64(id)), "remaining_s": .int(Int64(remaining)), "status": row["status"] ?? .null])
            }
            let running = rows.filter { $0["status"]?.text == "running" }.count
            return .object(["running": .int(Int64(running)), "timers": .array(shown)])
        case "laps":
            return .object(["status": state["status"] ?? .null, "lap_number": state["lap_number"] ?? .null,
                            "lap_elapsed_ms": state["lap_elapsed_ms"] ?? .null,
                            "total_elapsed_ms": state["total_elapsed_ms"] ?? .null,
                            "laps": .int(Int64(state["laps"]?.array.count ?? 0))])
        case "starport":
            return .object(["dispatches": .int(Int64(state["dispatches"]?.array.count ?? 0))])
        default:
            return .object([:])
        }
    }
}
