import OutaTimeStore

/// One event message's payload: the events as a JSON array in the shape
/// `history` returns, `[{"seq":1,"event":"…","at":"…","data":{…}}]`.
///
/// `data` is embedded as the raw JSON text it was given and read back as the
/// exact same text (no re-encoding), so a reader sees byte-for-byte what the
/// owner wrote. The decoder reads this encoder's layout only (`data` last).
enum EventBatchCodec {
    /// Why a stored payload could not be read.
    struct Malformed: Error, CustomStringConvertible {
        /// Where and what.
        let reason: String
        var description: String { "malformed event message: \(reason)" }
    }

    static func encode(_ events: [EventRecord]) -> [UInt8] {
        var out = "["
        for (index, event) in events.enumerated() {
            if index > 0 { out += "," }
            out += "{\"seq\":\(event.seq),\"event\":"
            appendQuoted(event.event, to: &out)
            out += ",\"at\":"
            appendQuoted(event.at, to: &out)
            out += ",\"data\":"
            out += event.data.text
            out += "}"
        }
        out += "]"
        return Array(out.utf8)
    }

    static func decode(_ bytes: [UInt8], channel: String) throws(Malformed) -> [EventRecord] {
        var reader = Reader(bytes: bytes)
        var events: [EventRecord] = []
        try reader.expect("[")
        if reader.peek == UInt8(ascii: "]") { return [] }
        while true {
            try reader.expect("{\"seq\":")
            let seq = try reader.integer()
            try reader.expect(",\"event\":")
            let name = try reader.string()
            try reader.expect(",\"at\":")
            let at = try reader.string()
            try reader.expect(",\"data\":")
            let data = try reader.rawValue()
            try reader.expect("}")
            events.append(EventRecord(channel: channel, seq: seq, event: name, data: JSONText(data), at: at))
            if reader.peek == UInt8(ascii: ",") { reader.index += 1; continue }
            try reader.expect("]")
            return events
        }
    }

    static func appendQuoted(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func expect(_ literal: String) throws(Malformed) {
            for byte in literal.utf8 {
                guard peek == byte else { throw Malformed(reason: "expected '\(literal)' at byte \(index)") }
                index += 1
            }
        }

        mutating func integer() throws(Malformed) -> Int64 {
            let start = index
            if peek == UInt8(ascii: "-") { index += 1 }
            while let byte = peek, byte >= 0x30 && byte <= 0x39 { index += 1 }
            guard let value = Int64(String(decoding: bytes[start..<index], as: UTF8.self)) else {
                throw Malformed(reason: "expected an integer at byte \(start)")
            }
            return value
        }

        mutating func string() throws(Malformed) -> String {
            try expect("\"")
            var scalars = String.UnicodeScalarView()
            var run = index
            func flush(_ end: Int) { scalars.append(contentsOf: String(decoding: bytes[run..<end], as: UTF8.self).unicodeScalars) }
            while let byte = peek {
                if byte == UInt8(ascii: "\"") {
                    flush(index)
                    index += 1
                    return String(scalars)
                }
                if byte == UInt8(ascii: "\\") {
                    flush(index)
                    index += 1
                    guard let escaped = peek else { break }
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "u"):
                        guard index + 4 <= bytes.count, let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
                            throw Malformed(reason: "bad \\u escape at byte \(index)")
                        }
                        index += 4
                        scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                    default: scalars.append(Unicode.Scalar(escaped))
                    }
                    run = index
                    continue
                }
                index += 1
            }
            throw Malformed(reason: "unterminated string")
        }

        /// The raw text of one JSON value (object, array, string or scalar).
        mutating func rawValue() throws(Malformed) -> String {
            let start = index
            var depth = 0
            var inString = false
            while let byte = peek {
                if inString {
                    if byte == UInt8(ascii: "\\") { index += 2; continue }
                    if byte == UInt8(ascii: "\"") { inString = false }
                    index += 1
                    if depth == 0 && !inString { break }
                    continue
                }
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { return try finish(start) }
                    depth -= 1
                    if depth == 0 { index += 1; return try finish(start) }
                case UInt8(ascii: ","):
                    if depth == 0 { return try finish(start) }
                default: break
                }
                index += 1
            }
            return try finish(start)
        }

        private func finish(_ start: Int) throws(Malformed) -> String {
            guard index > start, index <= bytes.count else { throw Malformed(reason: "expected a value at byte \(start)") }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }
    }
}
