import OutaTimeProtocol

/// How many items one channel may hold — timers of a list, dispatches of a
/// board, laps of a stopwatch: a server setting (`--max-channel-items`)
/// passed in with each action (``ActionContext/itemLimit``), not a domain
/// rule. It bounds every snapshot and every reply carrying a whole state
/// (PROTOCOL.md §11, "Frame bounds").
///
/// Only growth is refused: a channel that holds more (stored under a higher
/// limit) still loads, is read, changed and shrunk as before.
public struct ItemLimit: Sendable, Equatable {
    /// The most items a channel may hold.
    public var maximum: Int
    /// The setting that sets it, named in the refusal (`--max-channel-items`).
    public var setting: String

    /// Creates a limit of `maximum` items set by `setting`.
    public init(maximum: Int, setting: String) {
        self.maximum = maximum
        self.setting = setting
    }

    /// No limit (tests and tools that run a kind on its own).
    public static let unlimited = ItemLimit(maximum: .max, setting: "")

    /// Refuses one more item on a channel that holds `count` of them:
    /// `channel_full`, naming the count, the limit and the setting, and
    /// `remedy` (what makes room).
    public func checkRoom(holding count: Int, of items: String, remedy: String) throws(ProtocolError) {
        guard count >= maximum else { return }
        let source = setting.isEmpty ? "" : " (\(setting) \(maximum))"
        let holds = count == maximum ? "already holds \(count) \(items), the most one channel may hold"
            : "holds \(count) \(items), more than the \(maximum) one channel may hold now"
        throw ProtocolError(.channelFull, "this channel \(holds)\(source); \(remedy)")
    }
}
