/// ANSI styling, and widths and cuts that skip escape sequences.
enum ANSI {
    static let reset = "\u{1B}[0m"
    static let bold = "\u{1B}[1m"
    static let dim = "\u{1B}[2m"
    static let inverse = "\u{1B}[7m"
    static let red = "\u{1B}[38;5;196m"
    static let redOrange = "\u{1B}[38;5;202m"
    static let lime = "\u{1B}[38;5;154m"
    static let orange = "\u{1B}[38;5;208m"
    static let cyan = "\u{1B}[36m"
    static let yellow = "\u{1B}[33m"

    /// Columns `text` takes on screen (escape sequences take none).
    static func width(_ text: String) -> Int {
        var count = 0
        var inEscape = false
        for scalar in text.unicodeScalars {
            if inEscape {
                if (0x40...0x7E).contains(scalar.value) && scalar != "[" { inEscape = false }
            } else if scalar == "\u{1B}" {
                inEscape = true
            } else {
                count += DisplayWidth.of(scalar)
            }
        }
        return count
    }

    /// Cuts `text` to `limit` columns, keeping escape sequences; a wide
    /// character that would straddle the edge is left out.
    static func clip(_ text: String, _ limit: Int) -> String {
        var result = String.UnicodeScalarView()
        var count = 0
        var inEscape = false
        var full = false
        for scalar in text.unicodeScalars {
            if inEscape {
                result.append(scalar)
                if (0x40...0x7E).contains(scalar.value) && scalar != "[" { inEscape = false }
            } else if scalar == "\u{1B}" {
                inEscape = true
                result.append(scalar)
            } else {
                let width = DisplayWidth.of(scalar)
                if full || count + width > limit {
                    full = true
                    continue
                }
                count += width
                result.append(scalar)
            }
        }
        return String(result) + reset
    }

    /// `text` without its SGR sequences (`ESC[…m`): for `NO_COLOR`.
    static func unstyled(_ text: String) -> String {
        guard text.unicodeScalars.contains("\u{1B}") else { return text }
        var result = String.UnicodeScalarView()
        var pending = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if pending.isEmpty {
                if scalar == "\u{1B}" { pending.append(scalar) } else { result.append(scalar) }
                continue
            }
            pending.append(scalar)
            if pending.count == 2 && scalar != "[" {
                result.append(contentsOf: pending)
                pending = String.UnicodeScalarView()
            } else if pending.count > 2 && (0x40...0x7E).contains(scalar.value) {
                if scalar != "m" { result.append(contentsOf: pending) }
                pending = String.UnicodeScalarView()
            }
        }
        result.append(contentsOf: pending)
        return String(result)
    }
}
