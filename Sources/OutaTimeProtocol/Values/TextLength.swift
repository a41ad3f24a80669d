/// The one length rule for every string field the server bounds (PROTOCOL.md,
/// "Timeouts and limits"): a length in **characters** (what a person counts:
/// Swift `Character`s, extended grapheme clusters) and, with it, a bound in
/// **UTF-8 bytes** of 4 × the character limit.
///
/// Why both: one character may be made of any number of Unicode scalars (a
/// letter followed by thousands of combining marks is one character), so a
/// character limit alone bounds nothing the server stores or sends. 4 bytes
/// is the longest UTF-8 encoding of one scalar, so any text of at most N
/// characters that a person would write (one scalar or a short cluster each)
/// fits in 4 × N bytes; the bytes are checked first, which also keeps the
/// character count of a huge cluster from being computed at all.
public struct TextLength: Sendable, Equatable {
    /// UTF-8 bytes allowed per character of the limit.
    public static let bytesPerCharacter = 4

    /// The allowed number of characters.
    public let characters: ClosedRange<Int>

    /// Creates the rule for `characters` characters (and at most
    /// 4 × its upper bound bytes).
    public init(characters: ClosedRange<Int>) {
        self.characters = characters
    }

    /// Creates the rule for at most `maxCharacters` characters.
    public init(max maxCharacters: Int) {
        self.init(characters: 0...maxCharacters)
    }

    /// The most UTF-8 bytes allowed; `Int.max` when characters are unbounded.
    public var maxBytes: Int {
        let (bytes, overflow) = characters.upperBound.multipliedReportingOverflow(by: Self.bytesPerCharacter)
        return overflow ? Int.max : bytes
    }

    /// True when `text` keeps the rule.
    public func allows(_ text: String) -> Bool {
        let bytes = text.utf8.count
        guard bytes <= maxBytes else { return false }
        return characters.contains(text.count)
    }

    /// The rule in words, e.g. `of 1–100 characters and at most 400 bytes of
    /// UTF-8`; empty when nothing is bounded.
    public var rule: String {
        if characters == 0...Int.max { return "" }
        if characters.upperBound == Int.max { return "of at least \(characters.lowerBound) characters" }
        let count = characters.lowerBound == 0
            ? "at most \(characters.upperBound)" : "\(characters.lowerBound)–\(characters.upperBound)"
        return "of \(count) characters and at most \(maxBytes) bytes of UTF-8"
    }

    /// The length of `text` in words, e.g. `1 character and 6002 bytes`,
    /// for error messages (a request's text is bounded by the frame size).
    public static func measure(_ text: String) -> String {
        let bytes = text.utf8.count
        let characters = text.count
        return "\(characters) character\(characters == 1 ? "" : "s") and \(bytes) byte\(bytes == 1 ? "" : "s")"
    }

    /// The first control character of `text` and its 1-based position in
    /// characters, or nil when it has none. Free text (a display name, a
    /// timer's `event` and `location`, a dispatch's `note`) may hold none:
    /// C0 (U+0000–U+001F), DEL (U+007F) and C1 (U+0080–U+009F). They have
    /// no place in a one-line label, a terminal shows them as commands, and
    /// JSON writes each C0 one as six bytes (`\u0001`), which would break
    /// the frame-size proof (PROTOCOL.md §11, "Frame bounds"): without them a
    /// string of N characters and 4 × N bytes encodes in at most 5 × N + 2
    /// bytes (only `"` and `\` are escaped, and a character holds at most
    /// one of them).
    public static func firstControlCharacter(in text: String) -> (scalar: Unicode.Scalar, position: Int)? {
        // Fast path: no byte that can start a control character.
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == 0xC2 }) else { return nil }
        for (offset, character) in text.enumerated() {
            if let scalar = character.unicodeScalars.first(where: isControl) { return (scalar, offset + 1) }
        }
        return nil
    }

    /// C0, DEL or C1.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// The control-character rule in words, for error messages: `must not
    /// contain control characters (U+0000–U+001F, U+007F–U+009F), got
    /// U+000A at character 3`.
    public static func controlProblem(_ found: (scalar: Unicode.Scalar, position: Int)) -> String {
        let code = String(found.scalar.value, radix: 16, uppercase: true)
        let padded = String(repeating: "0", count: max(0, 4 - code.count)) + code
        return "must not contain control characters (U+0000–U+001F, U+007F–U+009F), got U+\(padded) at character \(found.position)"
    }

    /// The first Unicode format character (general category Cf) of `text`
    /// and its 1-based position in characters, or nil. Names (hello's
    /// `name` and `client`, a tokens-file `name`) may hold none: bidi
    /// overrides and isolates (U+202A–U+202E, U+2066–U+2069), marks
    /// (U+200E, U+200F), zero-width and invisible ones (U+200B, U+2060,
    /// U+FEFF, U+00AD, …) make one name look like another or reorder the
    /// line it is shown in. Zero-width (non-)joiners, U+200C and U+200D,
    /// stay allowed: emoji sequences and scripts such as Persian need them.
    public static func firstFormatCharacter(in text: String) -> (scalar: Unicode.Scalar, position: Int)? {
        // Fast path: ASCII only.
        guard text.utf8.contains(where: { $0 >= 0x80 }) else { return nil }
        for (offset, character) in text.enumerated() {
            if let scalar = character.unicodeScalars.first(where: isFormat) { return (scalar, offset + 1) }
        }
        return nil
    }

    /// Cf, except U+200C and U+200D (``firstFormatCharacter(in:)``).
    public static func isFormat(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .format && scalar.value != 0x200C && scalar.value != 0x200D
    }

    /// The format-character rule in words: `must not contain Unicode format
    /// characters (bidi controls, invisible marks: general category Cf),
    /// got U+202E at character 6`.
    public static func formatProblem(_ found: (scalar: Unicode.Scalar, position: Int)) -> String {
        "must not contain Unicode format characters (bidi controls such as U+202E, invisible marks such as U+200B; "
            + "general category Cf), got \(codePoint(found.scalar)) at character \(found.position)"
    }

    /// `U+000A`, `U+202E`, `U+E0001`.
    public static func codePoint(_ scalar: Unicode.Scalar) -> String {
        let code = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - code.count)) + code
    }

    /// Quotes client text for an error message: `'text'`, or its first
    /// `limit` Unicode scalars then `…'` and its length. Cut by scalars, not
    /// characters, so one character of thousands of combining marks cannot
    /// blow up the message.
    /// With `measured: false` the length is left out.
    public static func quoted(_ text: String, limit: Int = 40, measured: Bool = true) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > limit else { return "'\(text)'" }
        var head = String.UnicodeScalarView()
        head.append(contentsOf: scalars.prefix(limit))
        return "'\(String(head))…'" + (measured ? " (\(measure(text)))" : "")
    }
}
