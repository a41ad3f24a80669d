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
