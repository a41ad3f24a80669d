import Foundation
import Testing
@testable import outatime

/// The terminal client's column widths, checked by hand on a table and
/// against PyPI `wcwidth` (the reference its tables come from) over a
/// sample of every plane in use; the line-by-line painter; NO_COLOR.
@Suite("display width")
struct DisplayWidthTests {
    @Test("columns: ASCII 1, CJK and emoji 2, combining marks 0", arguments: [
        ("Clock tower", 11), ("時計台", 6), ("⏰", 2), ("😀", 2), ("e\u{301}", 1), ("é", 1),
        ("Ａ", 2), ("한국", 4), ("🕰", 1), ("\u{200D}", 0), ("a\u{FE0F}", 1), ("", 0), ("\u{1B}", 0),
    ])
    func widths(text: String, columns: Int) {
        #expect(DisplayWidth.of(text) == columns, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
    }

    @Test("fit pads to the columns and cuts by columns, ending a cut with …")
    func fit() {
        #expect(DisplayWidth.fit("時計台", 8) == "時計台  ")
        #expect(DisplayWidth.fit("42", 5, right: true) == "   42")
        let cut = DisplayWidth.fit("時計台の大時計", 8)
        #expect(DisplayWidth.of(cut) == 8 && cut.hasPrefix("時計台…"), "'\(cut)'")
        // A wide character never straddles the edge: the cell is padded instead.
        let odd = DisplayWidth.fit("a時計台の", 7)
        #expect(DisplayWidth.of(odd) == 7 && odd == "a時計… ", "'\(odd)'")
        #expect(DisplayWidth.prefix("e\u{301}x", columns: 1) == "e\u{301}")
    }

    @Test("control characters from the server are shown as �, never sent to the terminal")
    func sanitized() {
        #expect(DisplayWidth.sanitized("a\u{1B}[2Jb\n\u{9B}c") == "a\u{FFFD}[2Jb\u{FFFD}\u{FFFD}c")
        #expect(DisplayWidth.sanitized("時計台 ⏰") == "時計台 ⏰")
    }

    @Test("the same widths as PyPI wcwidth on a sample of every plane in use")
    func matchesWcwidth() throws {
        var scalars: [UInt32] = []
        var value: UInt32 = 0x20
        while value < 0x32000 {
            if let scalar = Unicode.Scalar(value), !(0x7F..<0xA0).contains(value) { scalars.append(scalar.value) }
            value += value < 0x3000 ? 1 : 7
        }
        scalars += [0xE0001, 0xE0020, 0xE0100, 0xE01EF]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", """
            import sys, wcwidth
            print(" ".join(str(max(0, wcwidth.wcwidth(chr(int(c))))) for c in sys.stdin.read().split()))
            """]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(scalars.map(String.init).joined(separator: " ").utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "python3 with wcwidth (make test-deps): \(problem)")
        let expected = String(decoding: data, as: UTF8.self).split(separator: " ").map { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1 }
        try #require(expected.count == scalars.count)
        var differences: [String] = []
        for (scalar, columns) in zip(scalars, expected) where DisplayWidth.of(Unicode.Scalar(scalar)!) != columns {
            differences.append("U+\(String(scalar, radix: 16, uppercase: true)): \(DisplayWidth.of(Unicode.Scalar(scalar)!)) vs \(columns)")
        }
        #expect(differences.isEmpty, "\(differences.count) of \(scalars.count) differ: \(differences.prefix(20))")
        #expect(scalars.count > 20_000)
    }

    @Test("the painter writes every line first, then only the lines that changed")
    func painter() {
        var painter = ScreenPainter(colour: true)
        let first = painter.frame(["a", "b", "c"])
        #expect(first.contains("\u{1B}[2J") && first.contains("\u{1B}[1;1Ha") && first.contains("\u{1B}[3;1Hc"))
        let second = painter.frame(["a", "B", "c"])
        #expect(second == "\u{1B}[2;1HB\u{1B}[0m\u{1B}[K", "\(second.debugDescription)")
        #expect(painter.frame(["a", "B", "c"]).isEmpty)
        painter.invalidate()
        #expect(painter.frame(["a", "B", "c"]).contains("\u{1B}[1;1Ha"))
    }

    @Test("without colour no SGR sequence is written; cursor moves stay")
    func noColour() {
        #expect(!ScreenPainter.colourWanted(environment: ["NO_COLOR": "1"]))
        #expect(ScreenPainter.colourWanted(environment: ["NO_COLOR": ""]))
        #expect(ScreenPainter.colourWanted(environment: [:]))
        var painter = ScreenPainter(colour: false)
        let bytes = painter.frame([ANSI.inverse + ANSI.bold + " OutaTime " + ANSI.reset + " x", ANSI.lime + "12" + ANSI.reset])
        #expect(!bytes.contains("m\u{1B}") && bytes.range(of: #"\e\[[0-9;]*m"#, options: .regularExpression) == nil,
                "\(bytes.debugDescription)")
        #expect(bytes.contains("\u{1B}[1;1H OutaTime  x") && bytes.contains("\u{1B}[2;1H12"))
        #expect(ANSI.unstyled("a\u{1B}[38;5;154mb\u{1B}[0m\u{1B}[Kc") == "ab\u{1B}[Kc")
    }
}
