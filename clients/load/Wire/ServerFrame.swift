import Foundation

/// What the harness needs to know about one frame from the server, found
/// without a JSON parse for the hot cases (a load `message`, `presence`).
enum ServerFrame {
    /// A `message` push whose data the harness wrote: its sequence number and
    /// the publisher's monotonic send time in nanoseconds.
    case loadMessage(seq: Int, sentNs: UInt64)
    /// A push the harness does not care about (`presence`, `tick`, `event`, …).
    case otherPush
    /// A reply to the request with integer `id`; `error` is `code: message` when not ok.
    case reply(id: Int?, error: String?)
    /// An `error` or `bye` push: the run is broken.
    case failure(String)

    private static let dataMarker = Array(#""data":"L "#.utf8)
    private static let presenceMarker = Array(#""type":"presence""#.utf8)
    private static let replyPrefix = Array(#"{"type":"reply","id":"#.utf8)
    private static let okTrue = Array(#","ok":true"#.utf8)

    /// Classifies one frame body.
    static func classify(_ body: UnsafeRawBufferPointer) -> ServerFrame {
        if let start = WireBytes.find(dataMarker, in: body),
           let (seq, afterSeq) = WireBytes.parseInt(body, at: start + dataMarker.count),
           let (sent, _) = WireBytes.parseInt(body, at: afterSeq + 1) {
            return .loadMessage(seq: seq, sentNs: UInt64(sent))
        }
        if WireBytes.find(presenceMarker, in: body) != nil { return .otherPush }
        // A successful reply as OutaTime writes it (keys in this order):
        // no parse needed. Any other shape takes the full parse below.
        if WireBytes.hasPrefix(replyPrefix, body),
           let (id, afterID) = WireBytes.parseInt(body, at: replyPrefix.count),
           WireBytes.matches(okTrue, in: body, at: afterID) {
            return .reply(id: id, error: nil)
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return .failure("unreadable frame from the server: \(String(decoding: body.prefix(200), as: UTF8.self))")
        }
        switch object["type"] as? String {
        case "reply":
            let id = (object["id"] as? NSNumber)?.intValue
            if object["ok"] as? Bool == true { return .reply(id: id, error: nil) }
            return .reply(id: id, error: describe(object["error"]))
        case "error":
            return .failure("error push: \(describe(object["error"]))")
        case "bye":
            return .failure("server said bye: \(object["reason"] as? String ?? "?")")
        default:
            return .otherPush
        }
    }

    /// `code: message` of an `error` object from a parsed frame.
    static func describe(_ error: Any?) -> String {
        guard let error = error as? [String: Any] else { return "unknown error" }
        return "\(error["code"] as? String ?? "?"): \(error["message"] as? String ?? "")"
    }
}

/// Byte scanning on frame bodies.
enum WireBytes {
    /// The offset of the first occurrence of `needle` in `haystack`.
    static func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
        guard let first = needle.first, haystack.count >= needle.count else { return nil }
        var index = 0
        let last = haystack.count - needle.count
        outer: while index <= last {
            if haystack[index] == first {
                for offset in 1..<needle.count where haystack[index + offset] != needle[offset] {
                    index += 1
                    continue outer
                }
                return index
            }
            index += 1
        }
        return nil
    }

    /// Whether `haystack` starts with `prefix`.
    static func hasPrefix(_ prefix: [UInt8], _ haystack: UnsafeRawBufferPointer) -> Bool {
        matches(prefix, in: haystack, at: 0)
    }

    /// Whether `needle` occurs in `haystack` at `offset`.
    static func matches(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        guard offset >= 0, haystack.count - offset >= needle.count else { return false }
        for index in 0..<needle.count where haystack[offset + index] != needle[index] { return false }
        return true
    }

    /// The decimal digits right after the first `marker` (such as
    /// `"heartbeat_ms":`), if there are any.
    static func int(after marker: [UInt8], in body: UnsafeRawBufferPointer) -> Int? {
        guard let start = find(marker, in: body) else { return nil }
        return parseInt(body, at: start + marker.count)?.0
    }

    /// Parses the decimal digits at `offset`; returns the value and the offset after them.
    static func parseInt(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> (Int, Int)? {
        var index = offset
        var value = 0
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
            value = value &* 10 &+ Int(bytes[index] - 0x30)
            index += 1
        }
        return index > offset ? (value, index) : nil
    }
}
