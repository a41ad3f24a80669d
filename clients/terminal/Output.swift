import Foundation
import OutaTimeProtocol

/// Printing: plain text for people, JSON for scripts; errors on stderr.
///
/// Text from the server never reaches the terminal as control characters:
/// an ESC in a channel name, an error message or a state could retitle the
/// window or move the cursor. Printed lines are sanitized (a control
/// character becomes `�`), and JSON escapes them (`\u009b`), so the data
/// stays exact for scripts.
enum Output {
    static func print(_ text: String) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { DisplayWidth.sanitized(String($0)) }
        let safe = lines.joined(separator: "\n")
        FileHandle.standardOutput.write(Data((safe.hasSuffix("\n") ? safe : safe + "\n").utf8))
    }

    static func fail(_ message: String) {
        FileHandle.standardError.write(Data("outatime: error: \(DisplayWidth.sanitized(message))\n".utf8))
    }

    /// Pretty, key-sorted JSON.
    static func json(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return escapingControls((try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "null")
    }

    /// JSON text with DEL and the C1 controls (U+007F–U+009F), which JSON
    /// allows raw in strings (and Foundation writes raw), written as
    /// `\u00XX` escapes: the same value, nothing a terminal acts on.
    static func escapingControls(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: { (0x7F...0x9F).contains($0.value) }) else { return json }
        var result = ""
        for scalar in json.unicodeScalars {
            if (0x7F...0x9F).contains(scalar.value) {
                result += "\\u00" + String(scalar.value, radix: 16)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Compact, key-sorted JSON on one line (JSON Lines), for `--json` in
    /// the commands that print as things happen (`watch`, `top`).
    static func jsonLine(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return escapingControls((try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "null")
    }

    /// A readable rendering of any result: `key: value` lines, nested
    /// objects indented, arrays of objects as one line per element.
    static func text(_ value: JSONValue, indent: String = "") -> String {
        switch value {
        case .object(let fields):
            if fields.isEmpty { return indent + "ok" }
            return fields.keys.sorted().map { key in
                let item = fields[key]!
                switch item {
                case .object(let inner) where !inner.isEmpty:
                    return "\(indent)\(key):\n" + text(item, indent: indent + "  ")
                case .array(let items) where !items.isEmpty:
                    return "\(indent)\(key):\n" + items.map { "\(indent)  - " + inline($0) }.joined(separator: "\n")
                default:
                    return "\(indent)\(key): \(inline(item))"
                }
            }.joined(separator: "\n")
        default:
            return indent + inline(value)
        }
    }

    /// One value on one line.
    static func inline(_ value: JSONValue) -> String {
        switch value {
        case .null: "—"
        case .bool(let flag): flag ? "yes" : "no"
        case .int(let number): "\(number)"
        case .double(let number): number == number.rounded() && abs(number) < 1e15 ? "\(Int64(number))" : "\(number)"
        case .string(let text): text
        case .array(let items): items.isEmpty ? "none" : "[" + items.map(inline).joined(separator: ", ") + "]"
        // An empty object (`accept_errors` while there were none) says so
        // rather than leaving the line blank.
        case .object(let fields) where fields.isEmpty: "none"
        case .object(let fields):
            fields.keys.sorted().map { "\($0)=\(inline(fields[$0]!))" }.joined(separator: " ")
        }
    }

    /// Seconds as hours with two decimals, e.g. `7.80 h`.
    static func hours(_ seconds: JSONValue?) -> String {
        guard let seconds = seconds?.number else { return "—" }
        return String(format: "%.2f h", seconds / 3600)
    }
}

extension JSONValue {
    subscript(key: String) -> JSONValue? {
        if case .object(let fields) = self { return fields[key] }
        return nil
    }

    var number: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    var array: [JSONValue] {
        if case .array(let items) = self { return items }
        return []
    }

    var text: String { Output.inline(self) }
}
