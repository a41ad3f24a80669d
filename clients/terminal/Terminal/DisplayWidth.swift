/// How many terminal columns text takes, as terminals and `wcwidth(3)`
/// count them: East Asian Wide and Fullwidth characters (CJK, emoji in
/// emoji presentation) take 2, combining marks and other zero-width code
/// points 0, everything else 1. Counted per code point, as terminals do.
enum DisplayWidth {
    /// The columns of one code point (a control character counts 0: text
    /// from the server is ``sanitized(_:)`` before it is shown).
    static func of(_ scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x7F { return value < 0x20 ? 0 : 1 }
        if value < 0xA0 { return 0 }
        if value < 0x300 { return 1 }
        if contains(DisplayWidthTable.zero, value) { return 0 }
        if value >= 0x1100, contains(DisplayWidthTable.wide, value) { return 2 }
        return 1
    }

    /// The columns of `text`.
    static func of(_ text: some StringProtocol) -> Int {
        text.unicodeScalars.reduce(0) { $0 + of($1) }
    }

    /// `text` cut to at most `columns` columns: a wide character that would
    /// straddle the edge is left out, with the zero-width marks that follow it.
    static func prefix(_ text: some StringProtocol, columns: Int) -> String {
        var result = String.UnicodeScalarView()
        var used = 0
        var dropping = false
        for scalar in text.unicodeScalars {
            let width = of(scalar)
            if width == 0 {
                if !dropping { result.append(scalar) }
                continue
            }
            if used + width > columns {
                dropping = true
                break
            }
            used += width
            result.append(scalar)
        }
        return String(result)
    }

    /// `text` cut or padded with spaces to exactly `columns` columns.
    static func pad(_ text: some StringProtocol, _ columns: Int) -> String {
        let shown = prefix(sanitized(String(text)), columns: columns)
        return shown + String(repeating: " ", count: max(0, columns - of(shown)))
    }

    /// `text` in exactly `columns` columns: padded with spaces (on the left
    /// when `right`), or, when longer than `columns - 1`, cut and ended with
    /// `…` so that one column is left blank before the next cell.
    static func fit(_ text: some StringProtocol, _ columns: Int, right: Bool = false) -> String {
        var shown = sanitized(String(text))
        var width = of(shown)
        if columns > 1, width > columns - 1 {
            shown = prefix(shown, columns: columns - 2) + "…"
            width = of(shown)
        }
        let gap = String(repeating: " ", count: max(0, columns - width))
        return right ? gap + shown : shown + gap
    }

    /// Text from the server made safe for a terminal: control characters
    /// (C0, DEL, C1: an ESC could restyle or move the cursor) become `�`.
    static func sanitized(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            result.append(isControl(scalar) ? "\u{FFFD}" : scalar)
        }
        return String(result)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value)
    }

    /// Binary search of sorted, inclusive ranges.
    private static func contains(_ ranges: [(UInt32, UInt32)], _ value: UInt32) -> Bool {
        var low = 0
        var high = ranges.count - 1
        while low <= high {
            let middle = (low + high) / 2
            if value < ranges[middle].0 {
                high = middle - 1
            } else if value > ranges[middle].1 {
                low = middle + 1
            } else {
                return true
            }
        }
        return false
    }
}
