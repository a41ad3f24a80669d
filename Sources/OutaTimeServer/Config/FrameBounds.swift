import OutaTimeDomain
import OutaTimeProtocol

/// The arithmetic behind "no frame the server sends is larger than the
/// 16 MiB a client must accept" (PROTOCOL.md §11, "Frame bounds", has the
/// proof in words). Every figure here is checked by a test against the
/// encoder: `FrameBoundTests` builds each worst case and measures it.
///
/// The per-item figures rest on the text rule (``TextLength``): a string of
/// at most N characters has at most 4 × N bytes and no control character,
/// so JSON escapes at most one `"` or `\` per character and it encodes in at
/// most 5 × N + 2 bytes.
public enum FrameBounds {
    /// The largest frame body a client must accept (protocol §1).
    public static let clientFrame = 16 << 20

    /// Room, in a `subscribe`, `get` or `command` reply, for everything but
    /// the channel's items: the envelope and result keys (about 200
    /// bytes), the longest `id` (64 characters of 256 bytes, control
    /// characters allowed: 1,538 bytes escaped), the channel name (73),
    /// 100 watchers of at most 551 bytes (a 26-byte session id and a
    /// 502-byte name: 55,100) and a state's fixed fields (laps: under 400).
    /// That is under 58,000 bytes; 64 KiB leaves a margin.
    public static let envelope = 64 << 10

    /// The largest item of any kind (a dispatch), in bytes.
    public static let maxItemBytes = ChannelKind.allCases.map { $0.behaviour.maxItemBytes }.max() ?? 0

    /// The highest `--max-channel-items` for which the largest snapshot,
    /// `maxChannelItems` worst-case items and the envelope, still fits in
    /// ``clientFrame``: 12,452.
    public static let maxChannelItems = (clientFrame - envelope) / maxItemBytes

    /// What a `history` or recovery entry adds around an event's `data`:
    /// `{"seq":S,"event":"NAME","data":…,"at":"TIME"},` with a 19-digit
    /// seq, a name of at most 20 characters and a 20-character time.
    public static let historyEntryOverhead = 95

    /// The largest `history` or recovery entry, in bytes.
    public static let maxHistoryEntryBytes = historyEntryOverhead
        + (ChannelKind.allCases.map { $0.behaviour.maxEventDataBytes }.max() ?? 0)

    /// The most events a `subscribe` with `since` sends back (`recovered:
    /// true`); a client that missed more gets the state instead. 10,000
    /// entries of at most ``maxHistoryEntryBytes`` and the envelope fit in
    /// ``clientFrame`` whatever `--history-limit` is.
    public static let maxRecoveredEvents = 10_000

    /// The highest `--max-frame`. A published message is read and written
    /// again for its subscribers, and writing can grow a number fourfold
    /// (`9e18`, 4 bytes, is written `9000000000000000000`, 19): the
    /// `message` push of a `publish` frame of N bytes is at most 4 × N plus
    /// its envelope (under 700 bytes), so N ≤ 4,000,000 keeps it within
    /// ``clientFrame``.
    public static let maxMaxFrame = 4_000_000
}
