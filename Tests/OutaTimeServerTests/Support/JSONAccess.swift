import Foundation
import OutaTimeProtocol

/// Typed reads of decoded frames, so tests say what they expect in one line.
extension Dictionary where Key == String, Value == Any {
    /// The frame's `type`.
    var type: String? { self["type"] as? String }

    /// A nested object.
    subscript(object key: String) -> [String: Any]? { self[key] as? [String: Any] }

    /// A nested array of objects (watchers, channels, events).
    subscript(objects key: String) -> [[String: Any]]? { self[key] as? [[String: Any]] }

    /// An integer field (JSON numbers arrive as NSNumber).
    subscript(int key: String) -> Int? { (self[key] as? NSNumber)?.intValue }

    /// The error code of a failed reply or an `error` push.
    var errorCode: ErrorCode? {
        (self[object: "error"]?["code"] as? String).flatMap(ErrorCode.init(rawValue:))
    }

    /// The human message of a failed reply or an `error` push.
    var errorMessage: String? { self[object: "error"]?["message"] as? String }

    /// Whether a reply says `ok: true`.
    var isOK: Bool { self["ok"] as? Bool == true }

    /// The sessions named in a `watchers`, `joined` or `left` list.
    func sessions(_ key: String) -> [String] {
        (self[objects: key] ?? []).compactMap { $0["session"] as? String }
    }
}

/// JSON equality: both values re-encoded with sorted keys.
func jsonEqual(_ a: Any?, _ b: Any?) -> Bool {
    func canonical(_ value: Any?) -> Data? {
        try? JSONSerialization.data(withJSONObject: value ?? NSNull(), options: [.sortedKeys, .fragmentsAllowed])
    }
    guard let left = canonical(a), let right = canonical(b) else { return false }
    return left == right
}

/// Compact text of frames, for failure messages.
func describe(_ frames: [[String: Any]]) -> String {
    let texts = frames.suffix(20).map { frame -> String in
        guard let data = try? JSONSerialization.data(withJSONObject: frame, options: [.sortedKeys]) else {
            return "\(frame)"
        }
        return String(decoding: data.prefix(400), as: UTF8.self)
    }
    return texts.isEmpty ? "(nothing)" : texts.joined(separator: " | ")
}

/// Reply error codes and push types, for tests that read a run of frames.
func summary(_ frames: [[String: Any]]) -> [String] {
    frames.map { frame in
        if let code = frame.errorCode { return "\(frame.type ?? "?"):\(code.rawValue)" }
        if frame.type == "bye" { return "bye:\(frame["reason"] as? String ?? "?")" }
        return frame.type ?? "?"
    }
}
