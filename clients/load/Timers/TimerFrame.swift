import Foundation
import OutaTimeProtocol

/// What the timers scenario needs from one server frame. The frames that
/// come by the million (ticks, `timer_added` and `timer_started` events,
/// successful `add` and `start` replies) are scanned without a JSON parse
/// when they start as the server writes them; key order inside their
/// objects is not relied on. Anything else takes the full parse.
enum TimerFrame {
    /// A `tick`: `data.timers` as (id, remaining_s) pairs, in list order,
    /// and `data.at`, the second the tick stands for (seconds since 1970;
    /// nil from a server that does not send it).
    case tick([(id: Int, remaining: Int)], at: Double?)
    /// A `tick` whose entries were not read (``classify(_:readingTicks:)``
    /// with `readingTicks` false: a viewer has no use for them).
    case tickNotRead
    /// A `timer_started {id, remaining_s}` event.
    case started(id: Int, remaining: Int)
    /// A reply to request `id`: ok with the result's `id` (a timer's) when
    /// there is one, or refused with `code: message`.
    case reply(id: Int?, timerID: Int?, error: String?)
    /// An `error` or `bye` push, or an unreadable frame: the run is broken.
    case failure(String)
    /// Anything else (`presence`, other events).
    case other

    private static let tickPrefix = Array(#"{"type":"tick","#.utf8)
    private static let eventPrefix = Array(#"{"type":"event","#.utf8)
    private static let replyPrefix = Array(#"{"type":"reply","id":"#.utf8)
    private static let okResult = Array(#","ok":true,"result":{"#.utf8)
    private static let startedMarker = Array(#""event":"timer_started""#.utf8)
    private static let timersMarker = Array(#""timers":["#.utf8)
    private static let dataMarker = Array(#""data":{"#.utf8)
    private static let atMarker = Array(#""at":""#.utf8)
    private static let idKey = Array("id".utf8)
    private static let remainingKey = Array("remaining_s".utf8)

    /// Classifies one frame body; `readingTicks` false skips a tick's entries.
    static func classify(_ body: UnsafeRawBufferPointer, readingTicks: Bool = true) -> TimerFrame {
        if WireBytes.hasPrefix(tickPrefix, body) {
            return readingTicks ? tick(body) : .tickNotRead
        }
        if WireBytes.hasPrefix(eventPrefix, body) {
            guard WireBytes.find(startedMarker, in: body) != nil else { return .other }
            if let data = WireBytes.find(dataMarker, in: body),
               let (fields, _) = intObject(body, at: data + dataMarker.count - 1),
               let id = fields.id, let remaining = fields.remaining {
                return .started(id: id, remaining: remaining)
            }
            return .failure("unreadable timer_started event: \(String(decoding: body.prefix(200), as: UTF8.self))")
        }
        // A successful reply: a flat result (a timer, the hello result) gives
        // its `id`; a nested one (a subscribe snapshot of a full list, ~100 KB
        // at 1,000 timers) carries no timer id the harness needs.
        if WireBytes.hasPrefix(replyPrefix, body),
           let (id, afterID) = WireBytes.parseInt(body, at: replyPrefix.count),
           WireBytes.matches(okResult, in: body, at: afterID) {
            return .reply(id: id, timerID: intObject(body, at: afterID + okResult.count - 1)?.fields.id, error: nil)
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return .failure("unreadable frame from the server: \(String(decoding: body.prefix(200), as: UTF8.self))")
        }
        switch object["type"] as? String {
        case "tick":
            return readingTicks ? tick(body) : .tickNotRead
        case "event":
            guard object["event"] as? String == "timer_started" else { return .other }
            let data = object["data"] as? [String: Any]
            guard let id = (data?["id"] as? NSNumber)?.intValue,
                  let remaining = (data?["remaining_s"] as? NSNumber)?.intValue else {
                return .failure("timer_started without id and remaining_s")
            }
            return .started(id: id, remaining: remaining)
        case "reply":
            let id = (object["id"] as? NSNumber)?.intValue
            if object["ok"] as? Bool == true {
                let result = object["result"] as? [String: Any]
                return .reply(id: id, timerID: (result?["id"] as? NSNumber)?.intValue, error: nil)
            }
            return .reply(id: id, timerID: nil, error: ServerFrame.describe(object["error"]))
        case "error":
            return .failure("error push: \(ServerFrame.describe(object["error"]))")
        case "bye":
            return .failure("server said bye: \(object["reason"] as? String ?? "?")")
        default:
            return .other
        }
    }

    /// Reads a tick's `data.timers` entries and its `at`.
    private static func tick(_ body: UnsafeRawBufferPointer) -> TimerFrame {
        guard let start = WireBytes.find(timersMarker, in: body) else { return .failure("tick without data.timers") }
        var entries: [(id: Int, remaining: Int)] = []
        var index = start + timersMarker.count
        while index < body.count, body[index] != UInt8(ascii: "]") {
            if body[index] == UInt8(ascii: "{") {
                guard let (fields, end) = intObject(body, at: index),
                      let id = fields.id, let remaining = fields.remaining else {
                    return .failure("unreadable tick entry: \(String(decoding: body.prefix(200), as: UTF8.self))")
                }
                entries.append((id, remaining))
                index = end
            } else {
                index += 1
            }
        }
        return .tick(entries, at: tickTime(body, from: index))
    }

    /// The `"at":"…"` after the timers array, read as milliseconds with the
    /// protocol's ISO 8601 reader (its integer path for the server's form).
    private static func tickTime(_ body: UnsafeRawBufferPointer, from offset: Int) -> Double? {
        let rest = UnsafeRawBufferPointer(rebasing: body[offset...])
        guard let marker = WireBytes.find(atMarker, in: rest) else { return nil }
        let start = marker + atMarker.count
        guard let end = rest[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        let text = String(decoding: rest[start..<end], as: UTF8.self)
        return ISOTime.parseMilliseconds(text).map { Double($0) / 1_000 }
    }

    /// Reads a flat object starting at the `{` at `offset`: integer `id` and
    /// `remaining_s`, other integer and string fields skipped; returns them
    /// and the offset after `}`. Nil when a value is an object or an array
    /// (not flat) or the object does not end.
    private static func intObject(_ body: UnsafeRawBufferPointer, at offset: Int)
        -> (fields: (id: Int?, remaining: Int?), end: Int)? {
        var id: Int?
        var remaining: Int?
        var index = offset + 1
        while index < body.count {
            let byte = body[index]
            if byte == UInt8(ascii: "}") { return ((id, remaining), index + 1) }
            guard byte == UInt8(ascii: "\"") else {
                index += 1
                continue
            }
            // A key: read to the closing quote, then `:` and the value.
            let keyStart = index + 1
            var keyEnd = keyStart
            while keyEnd < body.count, body[keyEnd] != UInt8(ascii: "\"") { keyEnd += 1 }
            var valueStart = keyEnd + 1
            while valueStart < body.count, body[valueStart] == UInt8(ascii: ":") || body[valueStart] == UInt8(ascii: " ") {
                valueStart += 1
            }
            let key = UnsafeRawBufferPointer(rebasing: body[keyStart..<min(keyEnd, body.count)])
            if let (value, after) = WireBytes.parseInt(body, at: valueStart) {
                if key.elementsEqual(idKey) { id = value } else if key.elementsEqual(remainingKey) { remaining = value }
                index = after
            } else if valueStart < body.count, body[valueStart] == UInt8(ascii: "\"") {
                // A string value: skip it (escaped quotes included).
                var scan = valueStart + 1
                while scan < body.count, body[scan] != UInt8(ascii: "\"") {
                    scan += body[scan] == UInt8(ascii: "\\") ? 2 : 1
                }
                index = scan + 1
            } else if valueStart < body.count, body[valueStart] == UInt8(ascii: "{") || body[valueStart] == UInt8(ascii: "[") {
                return nil
            } else {
                // true, false, null, a negative or fractional number: skip it.
                index = valueStart
                while index < body.count, body[index] != UInt8(ascii: ","), body[index] != UInt8(ascii: "}") { index += 1 }
            }
        }
        return nil
    }
}
