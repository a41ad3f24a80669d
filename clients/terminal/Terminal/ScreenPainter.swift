/// Turns successive frames of a full-screen view into the bytes to write:
/// the first frame (and the one after ``invalidate()``) paints every line,
/// later frames only the lines that changed, each with a cursor move and an
/// erase to the end of the line. Pure: the caller writes the result.
/// Without colour (`NO_COLOR`), every SGR sequence (`ESC[…m`) is left out.
struct ScreenPainter {
    /// Whether SGR styles (colours, bold, inverse) are written.
    let colour: Bool
    /// The lines as the terminal shows them now; nil: unknown (repaint all).
    private var shown: [String]?
    /// Bytes produced so far, for measuring.
    private(set) var bytesProduced = 0

    init(colour: Bool) { self.colour = colour }

    /// The next frame must repaint every line (after a resize or a clear).
    mutating func invalidate() { shown = nil }

    /// The bytes that bring the terminal from the last frame to `lines`.
    mutating func frame(_ lines: [String]) -> String {
        let lines = colour ? lines : lines.map(ANSI.unstyled)
        var out = ""
        let previous = shown
        if previous == nil || previous!.count != lines.count { out += "\u{1B}[H\u{1B}[2J" }
        for (index, line) in lines.enumerated() {
            if let previous, previous.count == lines.count, previous[index] == line { continue }
            out += "\u{1B}[\(index + 1);1H" + line + (colour ? ANSI.reset : "") + "\u{1B}[K"
        }
        shown = lines
        bytesProduced += out.utf8.count
        return out
    }

    /// Whether colour is wanted: `NO_COLOR` unset or empty (https://no-color.org).
    static func colourWanted(environment: [String: String]) -> Bool {
        (environment["NO_COLOR"] ?? "").isEmpty
    }
}

/// A box of text drawn over the middle of a screen (the `?` help).
enum Overlay {
    /// `screen` with `body` framed and centred over it; the lines the box
    /// covers are replaced whole (blank beside it).
    static func box(title: String, body: [String], over screen: [String], width: Int) -> [String] {
        let inner = min(max(width - 4, 1), max(DisplayWidth.of(title) + 2, body.map { DisplayWidth.of($0) }.max() ?? 0))
        let indent = String(repeating: " ", count: max(0, (width - inner - 4) / 2))
        var boxLines = [indent + "┌" + String(repeating: "─", count: inner + 2) + "┐"]
        boxLines.append(indent + "│ " + ANSI.bold + DisplayWidth.pad(title, inner) + ANSI.reset + " │")
        boxLines.append(indent + "│ " + String(repeating: " ", count: inner) + " │")
        for line in body { boxLines.append(indent + "│ " + DisplayWidth.pad(line, inner) + " │") }
        boxLines.append(indent + "└" + String(repeating: "─", count: inner + 2) + "┘")
        var result = screen
        let top = max(0, (screen.count - boxLines.count) / 2)
        for (offset, line) in boxLines.enumerated() where top + offset < result.count {
            result[top + offset] = ANSI.clip(line, width)
        }
        return result
    }
}
