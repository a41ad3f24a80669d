import OutaTimeProtocol

/// How log lines show text that may come from clients (names, channel
/// names, reasons): nothing in a value can end the line, start a field,
/// steer a terminal or reorder the line. Used by ``TextLogHandler`` and
/// ``JSONLogHandler``.
enum LogText {
    /// Characters never written as they are in any log format: C0, DEL, C1
    /// (U+0080–U+009F: U+009B is a terminal's CSI, U+0085 a line break to
    /// some readers), Unicode format characters (bidi overrides such as
    /// U+202E, zero-width marks) and the line and paragraph separators.
    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x2028, 0x2029: true
        default: scalar.value >= 0xA0 && scalar.properties.generalCategory == .format
        }
    }

    /// `value` as a text-format metadata value: as it is when it is a
    /// non-empty run of printable characters without space, `=`, `"` or `\`;
    /// otherwise in double quotes, with `"` and `\` backslashed, tab, CR
    /// and LF as `\t`, `\r`, `\n` and every other unsafe character as
    /// `\u{XXXX}`. So `name=Marty role=admin` logged as a value reads
    /// `name="Marty role=admin"`, never as two fields.
    static func value(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { scalar in
            !isUnsafe(scalar) && scalar != " " && scalar != "=" && scalar != "\"" && scalar != "\\"
                && !scalar.properties.isWhitespace
        }
        if plain { return value }
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default: out += escaped(scalar)
            }
        }
        return out + "\""
    }

    /// `text` with every unsafe character escaped (`\n`, `\u{202E}`, …), the
    /// rest as it is: for a line's message, which ends the line.
    static func message(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var out = ""
        for scalar in text.unicodeScalars { out += escaped(scalar) }
        return out
    }

    /// One scalar, escaped when unsafe.
    private static func escaped(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\n": "\\n"
        case "\r": "\\r"
        case "\t": "\\t"
        default: isUnsafe(scalar) ? "\\u{\(String(scalar.value, radix: 16, uppercase: true))}" : String(scalar)
        }
    }

    /// A JSON line with the unsafe characters the encoder leaves as they
    /// are (C1, format characters, U+2028, U+2029) written as `\uXXXX`
    /// escapes. Outside strings a JSON line is ASCII, so every such
    /// character is inside a string, where the escape means the same.
    static func json(_ line: String) -> String {
        guard line.utf8.contains(where: { $0 >= 0x80 }) else { return line }
        var out = String.UnicodeScalarView()
        for scalar in line.unicodeScalars {
            if scalar.value >= 0x80, isUnsafe(scalar) {
                let hex = String(scalar.value, radix: 16, uppercase: false)
                if scalar.value > 0xFFFF {
                    // A UTF-16 surrogate pair, as JSON spells it.
                    let v = scalar.value - 0x10000
                    for unit in [0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)] {
                        out.append(contentsOf: "\\u\(String(unit, radix: 16))".unicodeScalars)
                    }
                } else {
                    out.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).unicodeScalars)
                }
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }
}
