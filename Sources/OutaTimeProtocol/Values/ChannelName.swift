/// A validated channel name, `<kind>/<name>` (§4), e.g. `delorean/main`.
///
/// The text form is computed once at creation: it is the key of the hub's
/// channel table and goes into every push for the channel, so it should not
/// be rebuilt per use. Equality, hashing and ordering use that text alone.
public struct ChannelName: Sendable, Hashable, CustomStringConvertible, Comparable {
    /// The channel's kind, which decides its state and actions.
    public let kind: ChannelKind
    /// The part after the first `/`: 1–64 characters from `[A-Za-z0-9._-]`.
    public let name: String
    /// The wire form, `kind/name`.
    public let description: String

    /// The longest allowed name, in characters.
    public static let maxNameLength = 64

    /// The naming rule, for error messages.
    static let nameRule = "1–\(maxNameLength) characters from A–Z a–z 0–9 . _ -"

    /// Creates a channel name from parts already known to be valid (for
    /// example a kind's default channel). Use ``parse(_:)`` for client input.
    ///
    /// - Precondition: `name` follows the naming rule.
    public init(kind: ChannelKind, name: String) {
        precondition(Self.isValidName(name), "invalid channel name '\(name)': must be \(Self.nameRule)")
        self.kind = kind
        self.name = name
        self.description = "\(kind.rawValue)/\(name)"
    }

    /// Parses `<kind>/<name>`, splitting at the first `/`.
    ///
    /// The name is checked before the kind, so `foo/a b` is reported as
    /// malformed rather than as an unknown kind.
    ///
    /// - Throws: `invalid_channel` when there is no `/` or the name breaks
    ///   the rule (a second `/` does); `unknown_kind` when the kind is not
    ///   one of ``ChannelKind`` (case-sensitive).
    public static func parse(_ text: String) throws(ProtocolError) -> ChannelName {
        // On the UTF-8 bytes, without a String per part: this runs for every
        // request that names a channel (a Character search and two
        // substrings were 4,600 instructions per command under callgrind).
        var text = text
        let split: (slash: Int, kind: ChannelKind?, validName: Bool)? = text.withUTF8 { bytes in
            guard let slash = bytes.firstIndex(of: UInt8(ascii: "/")) else { return nil }
            let kindBytes = UnsafeBufferPointer(rebasing: bytes[..<slash])
            let kind = ChannelKind.allCases.first { kind in
                kind.rawValue.utf8.count == kindBytes.count && kind.rawValue.utf8.elementsEqual(kindBytes)
            }
            return (slash, kind, isValidName(UnsafeBufferPointer(rebasing: bytes[(slash + 1)...])))
        }
        guard let split else {
            throw ProtocolError(
                .invalidChannel,
                "channel \(quoted(text)) must be '<kind>/<name>' (like 'delorean/main'), with a name of \(nameRule)"
            )
        }
        let slash = text.utf8.index(text.utf8.startIndex, offsetBy: split.slash)
        let name = String(text[text.utf8.index(after: slash)...])
        guard split.validName else {
            throw ProtocolError(
                .invalidChannel,
                "channel \(quoted(text)) has an invalid name \(quoted(name)): a name is \(nameRule)"
            )
        }
        guard let kind = split.kind else {
            throw ProtocolError(
                .unknownKind,
                "channel \(quoted(text)) has unknown kind \(quoted(String(text[..<slash]))); kinds are \(ChannelKind.allowedList)"
            )
        }
        return ChannelName(validKind: kind, name: name, description: text)
    }

    /// Skips the checks `parse` has just made and reuses its input as the
    /// text form.
    private init(validKind kind: ChannelKind, name: String, description: String) {
        self.kind = kind
        self.name = name
        self.description = description
    }

    /// Whether `name` is 1–64 characters from `[A-Za-z0-9._-]`. Works on
    /// UTF-8 bytes: every allowed character is one ASCII byte.
    public static func isValidName(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { isValidName($0) }
    }

    private static func isValidName(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard (1...maxNameLength).contains(bytes.count) else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }

    /// Compares the text forms.
    public static func == (lhs: ChannelName, rhs: ChannelName) -> Bool {
        lhs.description == rhs.description
    }

    /// Hashes the text form only; kind and name are derived from it.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(description)
    }

    /// Orders by text form, so listings sort as `delorean/a` < `laps/a`.
    public static func < (lhs: ChannelName, rhs: ChannelName) -> Bool {
        lhs.description < rhs.description
    }
}

/// Quotes client input for an error message, shortened so a huge value
/// cannot blow up the reply.
func quoted(_ text: String, limit: Int = 80) -> String {
    TextLength.quoted(text, limit: limit)
}
