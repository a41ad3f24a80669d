import Foundation
import OutaTimeProtocol

/// Who performs an action, and when. `now` comes from the injected clock
/// (the server derives it from a monotonic clock, so it never jumps).
public struct ActionContext: Sendable, Equatable {
    /// The current time.
    public var now: Date
    /// The acting session's id (timer viewers are sessions).
    public var session: String
    /// The acting operator's display name (e.g. a dispatch's `created_by`).
    public var actor: String
    /// How many items (timers, dispatches, laps) the channel may hold: an
    /// action that would add one more is refused with `channel_full`.
    public var itemLimit: ItemLimit

    /// Creates a context.
    public init(now: Date, session: String = "test-session", actor: String = "tester",
                itemLimit: ItemLimit = .unlimited) {
        self.now = now
        self.session = session
        self.actor = actor
        self.itemLimit = itemLimit
    }
}

/// A durable change: stored, numbered (`seq`) and broadcast as an `event` push.
///
/// An event a kind makes (``init(_:encoding:)``) is encoded once, from the
/// kind's typed event, when it is made: ``json`` is the text the store
/// keeps and every `event` push carries. An event read back (from the
/// store, or from a push by a client) holds the parsed ``data`` instead.
/// Either form gives the other on demand; two events are equal when their
/// names and data values are.
public struct DomainEvent: Sendable, Equatable {
    /// The event name, e.g. `destination_set`.
    public let name: String
    private let body: Body

    private enum Body: Sendable {
        case encoded(RawJSON)
        case value(JSONValue)
    }

    /// An event made from a typed payload, encoded now, once. A payload that
    /// cannot be encoded (a NaN, which no kind's payload holds) becomes `{}`.
    public init<Payload: JSONWritable & Sendable>(_ name: String, encoding payload: Payload) {
        self.name = name
        body = .encoded((try? RawJSON(writing: payload)) ?? RawJSON(validJSON: "{}"))
    }

    /// An event read back, or written by hand in a test.
    public init(_ name: String, _ data: JSONValue = .object([:])) {
        self.name = name
        body = .value(data)
    }

    /// The event's data object as a value (parsed, for an event made by a kind).
    public var data: JSONValue {
        switch body {
        case .encoded(let json): (try? json.value()) ?? .object([:])
        case .value(let value): value
        }
    }

    /// The event's data as JSON text: for an event made by a kind, the text
    /// encoded when it was made.
    public var json: RawJSON {
        switch body {
        case .encoded(let json): json
        case .value(let value): (try? RawJSON(encoding: value)) ?? RawJSON(validJSON: "{}")
        }
    }

    public static func == (lhs: DomainEvent, rhs: DomainEvent) -> Bool {
        lhs.name == rhs.name && lhs.data == rhs.data
    }
}

/// What an action produced: the reply's `result` and the durable events
/// (none for read-only actions), in the order they happened.
public struct ActionOutcome: Sendable, Equatable {
    /// The `result` of the `command` reply, as the server encodes it: often
    /// a typed value (a state, a timer), which encodes several times faster
    /// than the same JSON built as a `JSONValue`.
    public var reply: any Encodable & Sendable {
        switch body {
        case .writable(let result): result
        case .encodable(let result): result
        }
    }

    /// The same value when it writes its own fields (a state, a timer, a
    /// dispatch): the server then writes the reply around it directly,
    /// without the dynamic cast and the generic path an `any Encodable`
    /// costs (docs/BENCHMARKS.md, "Replies written directly").
    public var writableReply: (any JSONWritable & Sendable)? {
        if case .writable(let result) = body { return result }
        return nil
    }

    /// The result, held once: a large state in an existential is a heap
    /// box, so one box rather than one per view of it.
    private enum Body: Sendable {
        case writable(any JSONWritable & Sendable)
        case encodable(any Encodable & Sendable)
    }

    private let body: Body
    /// Durable events to commit before replying.
    public var events: [DomainEvent]

    /// Creates an outcome whose result is given as JSON.
    public init(result: JSONValue = .object([:]), events: [DomainEvent] = []) {
        self.body = .encodable(result)
        self.events = events
    }

    /// Creates an outcome whose result is a typed value, encoded only when
    /// the reply is sent.
    public init(reply: some Encodable & Sendable, events: [DomainEvent] = []) {
        self.body = .encodable(reply)
        self.events = events
    }

    /// Creates an outcome whose result is a typed value that writes its own
    /// fields, written straight into the reply when it is sent.
    public init(reply: some JSONWritable & Sendable, events: [DomainEvent] = []) {
        self.body = .writable(reply)
        self.events = events
    }

    /// The `result` as JSON (tests, vectors, in-process clients): ``reply``
    /// itself when it is JSON, otherwise encoded and read back.
    public var result: JSONValue {
        if let json = reply as? JSONValue { return json }
        guard let data = try? MessageEncoder().body(reply), let json = try? JSONValue.parse(data) else {
            preconditionFailure("an action result did not encode as JSON: \(reply)")
        }
        return json
    }

    /// Same result JSON and same events.
    public static func == (lhs: ActionOutcome, rhs: ActionOutcome) -> Bool {
        lhs.result == rhs.result && lhs.events == rhs.events
    }
}

/// Whether an action changes state: read-only actions need only the `watch`
/// role and produce no events.
public enum ActionAccess: Sendable, Equatable {
    /// Reads state; allowed to `watch`.
    case readOnly
    /// Changes state; needs `operate`.
    case mutating
}
