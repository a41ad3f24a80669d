import Foundation
import OutaTimeProtocol

/// One channel kind's rules, all in one place: its actions, its events, how
/// it is shown and stored, and its clock. Each kind's state type conforms
/// (the four `Kinds/*+Behaviour.swift` files say what differs); the server
/// drives any kind through this protocol and never switches on the kind.
///
/// Every method is pure: time comes in as a parameter, nothing is read from
/// a clock or written anywhere, so a kind is tested without a server.
public protocol ChannelBehaviour: Sendable, Codable {
    /// The kind this state belongs to.
    static var kind: ChannelKind { get }

    /// Every action of the kind, with its access.
    static var actions: [String: ActionAccess] { get }

    /// Actions that make the issuing connection a viewer of something on the
    /// channel (a timer's `start`/`stop`): the connection must watch the
    /// channel first, so that leaving it can release what it viewed.
    static var viewerActions: Set<String> { get }

    /// The state of a new channel at `now`.
    static func initialState(now: Date) -> Self

    /// Performs `action` (already known to be in ``actions``). Throws a
    /// ``ProtocolError`` with a contract code and a message naming the bad
    /// value and what is allowed; on a throw the state is unchanged.
    mutating func perform(_ action: String, _ args: ActionArgs, _ context: ActionContext) throws(ProtocolError) -> ActionOutcome

    /// Applies a stored or received event that happened at `time` (replay
    /// after a restart, client-side recovery).
    mutating func apply(_ event: DomainEvent, at time: Date)

    /// How many items the state holds — timers, dispatches, laps — the
    /// count ``ActionContext/itemLimit`` bounds. 0 for a kind without items.
    var itemCount: Int { get }

    /// The most bytes one item takes in the JSON of a snapshot, its comma
    /// included, when its text keeps the text rules (``TextLength``, no
    /// control characters): the figure PROTOCOL.md §11's proof that no
    /// snapshot exceeds 16 MiB rests on. Tests build the worst case of each
    /// kind and check it against this. 0 for a kind without items.
    static var maxItemBytes: Int { get }

    /// The most bytes the `data` of one of the kind's events takes, by the
    /// same rules: bounds a `history` page and a recovery's `events`.
    static var maxEventDataBytes: Int { get }

    /// The `state` sent to clients, with live values as of `now`, typed:
    /// the server encodes it straight into the `subscribe` or `get` reply
    /// (``snapshot(at:)`` gives the same as a value).
    func wireState(at now: Date) -> any Encodable & Sendable

    // MARK: Time

    /// When the clock next needs the server, given the tick intervals it runs.
    func clockPlan(_ intervals: TickIntervals) -> ClockPlan

    /// Changes that happen on their own by `now` (a countdown reaching 0, a
    /// ship departing), already applied, in the order they happened.
    mutating func advance(to now: Date) -> [DomainEvent]

    /// One tick of the series ``clockPlan(_:)`` asked for, standing for the
    /// moment `time`: the push to show and any events it caused.
    mutating func tick(at time: Date) -> TickOutcome

    /// Called once per channel when the server starts: what could not
    /// survive the restart. `aliveUntil` is the last moment the previous
    /// server is known to have run (nil: unknown).
    mutating func recoverAfterRestart(at now: Date, aliveUntil: Date?) -> [DomainEvent]

    /// A connection stopped watching the channel (unsubscribe or disconnect):
    /// what it viewed may pause.
    mutating func release(session: String, at now: Date) -> [DomainEvent]

    // MARK: Storage

    /// The state as stored at `now`: live values baked in (a running
    /// countdown's remaining time), so that it can be read back alone.
    func stored(at now: Date) -> Self

    /// Reads a stored state (as written by `jsonText()`). Throws
    /// ``StateDecodingError`` naming what is wrong.
    static func decodeStored(jsonText: String) throws(StateDecodingError) -> Self

    /// A stored state was read back; it was stored at `storedAt`: live
    /// values continue from there (a running countdown counts down from
    /// its stored remaining time since `storedAt`).
    mutating func resumeLiveValues(storedAt: Date)

    /// The whole state is stored with a commit once at least this many
    /// events were stored since it last was; the events in between rebuild
    /// it on load (``apply(_:at:)``). 1 stores it with every commit. A kind
    /// whose state grows with use returns at least its size in elements, so
    /// that storing it costs O(1) per event, amortised.
    var eventsPerStoredState: Int64 { get }
}

extension ChannelBehaviour {
    /// The `state` sent to clients at `now` as a value (clients, tests):
    /// ``wireState(at:)`` encoded and read back.
    public func snapshot(at now: Date) -> JSONValue {
        let state = wireState(at: now)
        guard let value = try? RawJSON(encoding: state).value() else {
            preconditionFailure("a channel state did not encode as JSON: \(state)")
        }
        return value
    }

    /// No viewer actions.
    public static var viewerActions: Set<String> { [] }

    /// No items.
    public var itemCount: Int { 0 }

    /// No items.
    public static var maxItemBytes: Int { 0 }

    /// No clock.
    public func clockPlan(_ intervals: TickIntervals) -> ClockPlan { .idle }

    /// Nothing happens on its own.
    public mutating func advance(to now: Date) -> [DomainEvent] { [] }

    /// No ticks.
    public mutating func tick(at time: Date) -> TickOutcome { TickOutcome() }

    /// Nothing is lost in a restart.
    public mutating func recoverAfterRestart(at now: Date, aliveUntil: Date?) -> [DomainEvent] { [] }

    /// Nobody views anything.
    public mutating func release(session: String, at now: Date) -> [DomainEvent] { [] }

    /// Stored as it is.
    public func stored(at now: Date) -> Self { self }

    /// No live values.
    public mutating func resumeLiveValues(storedAt: Date) {}

    /// Through the kind's `Decodable` conformance (Foundation's decoder).
    public static func decodeStored(jsonText: String) throws(StateDecodingError) -> Self {
        do {
            return try JSONDecoder().decode(Self.self, from: Data(jsonText.utf8))
        } catch let error as DecodingError {
            throw StateDecodingError(kind: kind, message: ChannelState.describe(error))
        } catch {
            throw StateDecodingError(kind: kind, message: "\(error)")
        }
    }

    /// `unknown_action` naming the action and listing the valid ones.
    static func unknownAction(_ action: String, kind: ChannelKind) -> ProtocolError {
        ProtocolError(.unknownAction,
            "channel kind '\(kind.rawValue)' has no action '\(action)'; valid actions: \(actions.keys.sorted().joined(separator: ", "))")
    }

    /// `unknown_action` for this kind.
    public static func unknownAction(_ action: String) -> ProtocolError {
        unknownAction(action, kind: kind)
    }
}

/// How often the ticking kinds tick: server settings (`--delorean-tick-ms`,
/// `--lap-tick-ms`), not domain rules.
public struct TickIntervals: Sendable, Equatable {
    /// Milliseconds between DeLorean acceleration ticks (domain: 100).
    public var deloreanMs: UInt64
    /// Milliseconds between lap stopwatch ticks.
    public var lapsMs: UInt64

    /// Creates the intervals.
    public init(deloreanMs: UInt64, lapsMs: UInt64) {
        self.deloreanMs = deloreanMs
        self.lapsMs = lapsMs
    }
}

/// When a channel's clock next needs the server.
public struct ClockPlan: Sendable, Equatable {
    /// The tick series running now, if any.
    public var ticks: TickSeries?
    /// The next moment the state changes on its own (``ChannelBehaviour/advance(to:)``), if any.
    public var nextChange: Date?

    /// Creates a plan.
    public init(ticks: TickSeries? = nil, nextChange: Date? = nil) {
        self.ticks = ticks
        self.nextChange = nextChange
    }

    /// Nothing to wake for.
    public static let idle = ClockPlan()
}

/// A series of ticks: tick k (k ≥ 1) falls at `anchor + k × interval`, so a
/// late wake never shifts the ones after it.
public struct TickSeries: Sendable, Equatable {
    /// What a late wake does with the ticks it missed.
    public enum CatchUp: Sendable, Equatable {
        /// Play every missed tick in order (each changes the state: a
        /// DeLorean trip is always 88 speeds, then the time travel).
        case everyTick
        /// Play only the newest (a tick only shows the time).
        case newestOnly
    }

    /// Milliseconds between ticks.
    public var intervalMs: UInt64
    /// The moment tick 0 stands for; nil: the moment the series starts.
    public var anchor: Date?
    /// What a late wake plays.
    public var catchUp: CatchUp
    /// Creates a series.
    public init(intervalMs: UInt64, anchor: Date? = nil, catchUp: CatchUp) {
        self.intervalMs = intervalMs
        self.anchor = anchor
        self.catchUp = catchUp
    }
}

/// What one tick produced.
public struct TickOutcome: Sendable {
    /// The `tick` push's `data`; nil when there is nothing to show.
    public var push: (any Encodable & Sendable)?
    /// Durable events the tick caused (already applied).
    public var events: [DomainEvent]

    /// Creates an outcome.
    public init(push: (any Encodable & Sendable)? = nil, events: [DomainEvent] = []) {
        self.push = push
        self.events = events
    }
}

extension ChannelKind {
    /// The state type of this kind: the one place a kind name turns into rules.
    public var behaviour: any ChannelBehaviour.Type {
        switch self {
        case .delorean: DeLoreanState.self
        case .starport: StarportState.self
        case .timers: TimerListState.self
        case .laps: LapSessionState.self
        }
    }
}
