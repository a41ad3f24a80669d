/// One channel as stored: identity, event count and its latest state.
///
/// The store knows nothing of the channel kinds: `state` is JSON text written
/// and read by the domain module, kept opaque here so that the store depends
/// on GRDB only.
public struct ChannelRecord: Sendable, Equatable {
    /// The full channel name, `<kind>/<name>`.
    public var name: String
    /// The kind (`delorean`, `starport`, ...), kept apart for cheap listing.
    public var kind: String
    /// Number of durable events applied to the channel (protocol §4).
    public var seq: Int64
    /// The channel's state as JSON text, as of `stateSeq`.
    public var state: String
    /// The seq `state` is as of: `seq`, or less when the events after it
    /// must be applied to it (see ``StoreWrite/appendEvents(channel:seq:state:events:)``).
    public var stateSeq: Int64
    /// When `state` was stored (ISO 8601, whole seconds, the writer's
    /// clock); nil when unknown. Live values in it (a running countdown's
    /// remaining time) are as of this moment.
    public var stateAt: String?

    /// Creates a record from its fields; `stateSeq` defaults to `seq`.
    public init(name: String, kind: String, seq: Int64, state: String, stateSeq: Int64? = nil, stateAt: String? = nil) {
        self.name = name
        self.kind = kind
        self.seq = seq
        self.state = state
        self.stateSeq = stateSeq ?? seq
        self.stateAt = stateAt
    }

    /// The same channel data; when the state was stored (`stateAt`, the
    /// writer's clock) is not compared.
    public static func == (lhs: ChannelRecord, rhs: ChannelRecord) -> Bool {
        lhs.name == rhs.name && lhs.kind == rhs.kind && lhs.seq == rhs.seq && lhs.state == rhs.state
            && lhs.stateSeq == rhs.stateSeq
    }
}

/// One durable event of a channel's log, in the shape `history` returns.
public struct EventRecord: Sendable, Equatable {
    /// The full channel name the event belongs to.
    public var channel: String
    /// The channel's seq after this event (1 for the first event).
    public var seq: Int64
    /// The event name, e.g. `destination_set`.
    public var event: String
    /// The event's data as JSON text (deferred when written by the server).
    public var data: JSONText
    /// When the event happened, ISO 8601 UTC.
    public var at: String
    /// The keyed command (protocol §6.9, `idempotency_key`) that produced
    /// the event, stored with it so that a restart still recognises a
    /// repeat; nil for every other event. Not read back by ``Store/history(channel:after:through:limit:)``.
    public var command: CommandKeyRecord? {
        get { commandBox?.record }
        set { commandBox = newValue.map(CommandKeyBox.init) }
    }
    /// Boxed: one pointer in every record instead of three strings, as
    /// almost no event has a keyed command and records are copied along
    /// the whole durable path.
    private var commandBox: CommandKeyBox?

    /// Creates a record from its fields.
    public init(channel: String, seq: Int64, event: String, data: JSONText, at: String,
                command: CommandKeyRecord? = nil) {
        self.channel = channel
        self.seq = seq
        self.event = event
        self.data = data
        self.at = at
        self.command = command
    }
}

/// ``EventRecord/command``'s storage.
private final class CommandKeyBox: Sendable, Equatable {
    let record: CommandKeyRecord
    init(_ record: CommandKeyRecord) { self.record = record }
    static func == (lhs: CommandKeyBox, rhs: CommandKeyBox) -> Bool { lhs.record == rhs.record }
}

/// A command that carried an `idempotency_key` and produced a durable
/// event: what a repeat of it is answered with (protocol §6.9).
public struct CommandKeyRecord: Sendable, Equatable {
    /// The client's key: 1 … 64 characters of `A–Z a–z 0–9 . _ - :`.
    public var key: String
    /// The action the command ran, e.g. `add`.
    public var action: String
    /// The reply's `result` as JSON text; nil when it was too large to keep.
    public var result: String?

    /// Creates a record from its fields.
    public init(key: String, action: String, result: String?) {
        self.key = key
        self.action = action
        self.result = result
    }
}

/// A remembered keyed command as loaded back with its channel: the
/// command, the seq of its event and when that event happened.
public struct StoredCommandKey: Sendable, Equatable {
    /// The full channel name.
    public var channel: String
    /// The seq of the command's event.
    public var seq: Int64
    /// When the event happened, ISO 8601 UTC (whole seconds).
    public var at: String
    /// The key, the action and the result.
    public var command: CommandKeyRecord

    /// Creates a record from its fields.
    public init(channel: String, seq: Int64, at: String, command: CommandKeyRecord) {
        self.channel = channel
        self.seq = seq
        self.at = at
        self.command = command
    }
}

/// One change to apply to the database. A batch of these is applied in a
/// single transaction by ``Store/apply(_:historyLimit:foldEvery:foldLater:)``.
public enum StoreWrite: Sendable, Equatable {
    /// Inserts a new channel (its `seq` is normally 0). Fails if it exists.
    case createChannel(ChannelRecord)
    /// Records `events` and sets the channel's `seq` to the value after them,
    /// and its `state` (with `state_seq` = `seq`) when one is given; without
    /// one, the stored state stays as of an earlier seq and a reader applies
    /// the events after it. The events must be numbered
    /// `seq - events.count + 1 ... seq` and the stored seq must be
    /// `seq - events.count`: a gap in the log would make recovery (`subscribe
    /// since`, loading) silently wrong, so it is refused. Events after
    /// `state_seq` are never pruned.
    case appendEvents(channel: String, seq: Int64, state: JSONText?, events: [EventRecord])
    /// Replaces the channel's state without an event (live values saved
    /// as of now), as of the channel's current `seq`.
    case saveState(channel: String, state: JSONText)
    /// Sets one of the server's own values (``Store/meta(_:)``), such as
    /// the last moment it is known to have run.
    case setMeta(key: String, value: String)
    /// Deletes a channel that never had an event (its stored seq is 0):
    /// the server forgets idle empty channels. Refused with
    /// ``StoreError/notEmpty(channel:seq:)`` for a channel with events, so
    /// no event can be lost this way.
    case dropEmptyChannel(String)
}

/// A stored JSON text (a channel state, an event's data), given as is or
/// encoded later on the writer thread.
///
/// Encoding is the biggest part of a durable command's work on the event
/// loop (a timer list of 100 countdowns takes a few hundred microseconds).
/// The server hands over immutable values with ``init(deferred:)``; the
/// writer encodes them inside the transaction, off the loop, where the
/// fsync wait leaves time to spare.
public struct JSONText: Sendable, Equatable, ExpressibleByStringInterpolation, CustomStringConvertible {
    private let encode: @Sendable () -> String

    /// A text known now.
    public init(_ text: String) { encode = { text } }

    /// A text produced when the write is applied (on the writer thread).
    /// `encode` must only read values it captured.
    public init(deferred encode: @escaping @Sendable () -> String) { self.encode = encode }

    /// A literal text (tests).
    public init(stringLiteral value: String) { self.init(value) }

    /// An interpolated literal text (tests).
    public init(stringInterpolation: DefaultStringInterpolation) {
        self.init(String(stringInterpolation: stringInterpolation))
    }

    /// The text; a deferred one is encoded on every call.
    public var text: String { encode() }

    public var description: String { text }

    /// Equal texts.
    public static func == (lhs: JSONText, rhs: JSONText) -> Bool { lhs.text == rhs.text }
}

/// A write the store refused before SQLite did.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The write names a channel that has not been created.
    case unknownChannel(String)
    /// `appendEvents` expected the stored seq to be `expected`, but it is `stored`.
    case seqMismatch(channel: String, expected: Int64, stored: Int64)
    /// `appendEvents` carried events that are not numbered consecutively up to
    /// the new seq, or that belong to another channel.
    case invalidEvents(channel: String, reason: String)
    /// `dropEmptyChannel` named a channel that has events.
    case notEmpty(channel: String, seq: Int64)
    /// The database file at `path` is no longer the one opened: removed or
    /// replaced while the store is open. A commit would go to a file that
    /// is gone at the next start.
    case fileGone(path: String)

    /// A one-line explanation that names the channel and the seqs involved.
    public var description: String {
        switch self {
        case .unknownChannel(let channel):
            "unknown channel '\(channel)'"
        case .seqMismatch(let channel, let expected, let stored):
            "channel '\(channel)' is at seq \(stored) in the store, the write expected \(expected)"
        case .invalidEvents(let channel, let reason):
            "invalid events for channel '\(channel)': \(reason)"
        case .notEmpty(let channel, let seq):
            "channel '\(channel)' is at seq \(seq): only a channel without events may be dropped"
        case .fileGone(let path):
            "the database file \(path) was removed or replaced after the server opened it: nothing more is stored; restart the server"
        }
    }
}
