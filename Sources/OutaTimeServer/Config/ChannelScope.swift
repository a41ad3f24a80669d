import OutaTimeProtocol

/// One channel pattern of a token's `channels` list. The whole language:
///
/// - `*`: every channel;
/// - `KIND/*`: every channel of one kind (`starport/*`);
/// - `KIND/NAME`: exactly one channel (`timers/hill-valley`), a valid
///   channel name.
///
/// Nothing else: no `*` inside a name (`starport/lobby-*`), no `*/NAME`, no
/// other wildcard. A pattern outside the language is refused when the
/// tokens file is read, rather than matching something unexpected.
public enum ChannelPattern: Sendable, Hashable, CustomStringConvertible {
    /// `*`.
    case all
    /// `KIND/*`.
    case kind(ChannelKind)
    /// `KIND/NAME`.
    case exact(ChannelName)

    /// The rule, for error messages.
    static let rule = "a pattern is KIND/NAME (one channel), KIND/* (every channel of a kind) "
        + "or * (every channel), with KIND one of \(ChannelKind.allowedList)"

    /// Parses one pattern; the message names it and says what is allowed.
    public static func parse(_ text: String) throws(ConfigError) -> ChannelPattern {
        if text == "*" { return .all }
        if let slash = text.firstIndex(of: "/"), text[text.index(after: slash)...] == "*" {
            let kind = String(text[..<slash])
            guard let parsed = ChannelKind(rawValue: kind) else {
                throw ConfigError(message: "channel pattern '\(text)' has unknown kind '\(kind)': \(rule)")
            }
            return .kind(parsed)
        }
        do {
            return .exact(try ChannelName.parse(text))
        } catch {
            let why = text.contains("*") ? "'*' stands alone or as the whole name" : error.message
            throw ConfigError(message: "channel pattern '\(text)' is not allowed (\(why)): \(rule)")
        }
    }

    /// Whether the pattern covers `channel`.
    public func matches(_ channel: ChannelName) -> Bool {
        switch self {
        case .all: true
        case .kind(let kind): channel.kind == kind
        case .exact(let name): channel == name
        }
    }

    /// The pattern as written in the file.
    public var description: String {
        switch self {
        case .all: "*"
        case .kind(let kind): "\(kind.rawValue)/*"
        case .exact(let name): name.description
        }
    }
}

/// The channels a connection may name: every channel, or those its token's
/// patterns cover. Checked by every request that names a channel, and by
/// `list`.
public enum ChannelScope: Sendable, Hashable, CustomStringConvertible {
    /// No `channels` key (or anonymous mode): every channel.
    case everything
    /// Only the channels these patterns cover (never empty).
    case only([ChannelPattern])

    /// Whether the scope covers `channel`.
    public func allows(_ channel: ChannelName) -> Bool {
        switch self {
        case .everything: true
        case .only(let patterns): patterns.contains { $0.matches(channel) }
        }
    }

    /// The patterns, comma-separated (`*` for everything), for messages.
    public var description: String {
        switch self {
        case .everything: "*"
        case .only(let patterns): patterns.map(\.description).joined(separator: ", ")
        }
    }
}
