import Foundation
import OutaTimeDomain
import OutaTimeProtocol

/// The client's copy of one subscribed channel: its state at ``seq``, kept
/// current by applying `event` pushes strictly in seq order.
///
/// A pure value: the connection feeds it `subscribe` results and events; it
/// does no I/O, so its rules are tested without a socket. The rules are
/// PROTOCOL.md §8–9: apply only the event with seq = ``seq`` + 1, ignore
/// seq ≤ ``seq`` (already applied), and treat a larger jump as a gap that a
/// `subscribe` with `since` must fill.
public struct ChannelMirror: Sendable, Equatable {
    /// What ``apply(_:)`` did with an event.
    public enum Disposition: Sendable, Equatable {
        /// The event was the next one and changed the state.
        case applied
        /// Its seq was not above ``seq``: already applied, ignored.
        case stale
        /// Its seq skipped past `expected`: events were missed. The event is
        /// held until a `subscribe` with `since: seq` fills the gap.
        case gap(expected: Int64)
        /// A `subscribe` for the channel is in flight: the event is held and
        /// re-applied once its result is in.
        case held
    }

    /// The channel, `kind/name`.
    public let channel: String
    /// The channel's kind, from the first `subscribe` result.
    public private(set) var kind: ChannelKind?
    /// The seq of the last event applied (or of the snapshot).
    public private(set) var seq: Int64 = 0
    /// The state at ``seq``; nil before the first `subscribe` result, or when
    /// the server's state did not decode as the kind's state.
    public private(set) var state: ChannelState?
    /// Everyone subscribed, this connection included.
    public private(set) var watchers: [Watcher] = []
    /// How many watch the channel, from the server's `watcher_count` (exact
    /// also in a crowded channel, whose `watchers` list is cut short), else
    /// the length of ``watchers``.
    public var watcherCount: Int { reportedWatcherCount ?? watchers.count }
    private var reportedWatcherCount: Int?
    /// The latest tick's data (speed, countdowns, lap time): render it, but
    /// it is not part of ``state`` (§7: ticks are best-effort). A tick
    /// describes the state it arrived after: an event past it (a trip's
    /// `acceleration_started`, a timer stopped, a stopwatch reset) or a
    /// state from a `subscribe` result at another seq discards it, so the
    /// last trip's 88 mph is never shown as the new trip's speed (issue 27).
    public private(set) var lastTick: JSONValue?
    /// The highest seq received for the channel (applied or held) when
    /// ``lastTick`` arrived: the state the tick describes.
    private var tickSeq: Int64 = 0
    /// True once a `subscribe` result gave the mirror the state at ``seq``.
    public private(set) var isSynced = false

    /// True while a `subscribe` for this channel is in flight.
    public private(set) var isSyncing = false
    /// Events received while syncing or after a gap, oldest first; at most
    /// ``maxHeld`` (``hold(_:)``).
    private var held: [ChannelEvent] = []

    /// Events held at most: a `subscribe` the server never answers, while
    /// the channel's events pour in, must not fill memory.
    static let maxHeld = 10_000

    /// An empty mirror of `channel`, waiting for its first `subscribe` result.
    public init(channel: String) {
        self.channel = channel
    }

    /// The `since` for the next `subscribe`: ``seq`` when the mirror holds a
    /// state the missed events can be applied to, else nil (a full state).
    public var resumeSeq: Int64? { isSynced && state != nil ? seq : nil }

    /// The state as the server would send it at `now` (live values, such as
    /// a running countdown, computed for that moment).
    public func snapshot(at now: Date = Date()) -> JSONValue? { state?.snapshot(at: now) }

    /// Takes in a durable event; see ``Disposition``.
    public mutating func apply(_ event: ChannelEvent) -> Disposition {
        if isSyncing || !isSynced {
            hold(event)
            return .held
        }
        if event.seq <= seq { return .stale }
        guard event.seq == seq + 1 else {
            hold(event)
            return .gap(expected: seq + 1)
        }
        state?.apply(event.domainEvent, at: event.date)
        seq = event.seq
        discardTick(after: seq)
        return .applied
    }

    /// Brings the mirror up to date from a `subscribe` result: a full state
    /// replaces it; `recovered: true` applies the missed events to the state
    /// kept. Returns how, with the events applied (for ``OutaTimeConnection/onEvent``),
    /// or nil when the recovered events do not continue at ``seq`` + 1 (the
    /// caller then subscribes again without `since`; the mirror is unchanged).
    public mutating func sync(with result: SubscribeResult) -> (ChannelSync, [ChannelEvent])? {
        let before = isSynced ? seq : nil
        if result.recovered == true {
            guard var recovered = state else { return nil }
            var at = seq
            var applied: [ChannelEvent] = []
            for entry in result.events ?? [] where entry.seq > at {
                guard entry.seq == at + 1 else { return nil }
                let event = ChannelEvent(channel: channel, history: entry)
                recovered.apply(event.domainEvent, at: event.date)
                applied.append(event)
                at = entry.seq
            }
            guard at == result.seq else { return nil }
            state = recovered
            seq = at
            discardTick(after: seq)
            watchers = result.watchers
            reportedWatcherCount = result.watcherCount
            let sync = ChannelSync(channel: channel, sinceSeq: before, seq: seq, method: .recovered(events: applied.count))
            return (sync, applied)
        }
        kind = result.kind
        seq = result.seq
        // A full state is the truth at its seq; a tick that arrived at any
        // other seq (before a reload, or of a channel since made anew) is not.
        if lastTick != nil && tickSeq != seq { lastTick = nil }
        state = result.state.flatMap { try? ChannelState(kind: result.kind, json: $0) }
        watchers = result.watchers
        reportedWatcherCount = result.watcherCount
        let method: ChannelSync.Method = before == nil ? .snapshot : .reloaded
        isSynced = true
        return (ChannelSync(channel: channel, sinceSeq: before, seq: seq, method: method), [])
    }

    /// Keeps `event` for later. Past ``maxHeld`` the oldest half goes: the
    /// next event applied then skips past ``seq``, and the gap brings the
    /// missing ones back from the server (`subscribe` with `since`).
    private mutating func hold(_ event: ChannelEvent) {
        if held.count >= Self.maxHeld { held.removeFirst(Self.maxHeld / 2) }
        held.append(event)
    }

    /// Notes the latest tick, as describing the state after the last event
    /// received (events held during a sync included: §7, a run's first tick
    /// follows the event that started it).
    public mutating func record(_ tick: TickPush<JSONValue>) {
        lastTick = tick.data
        tickSeq = max(seq, held.last?.seq ?? 0)
    }

    /// The state moved to `newSeq`: a tick that arrived before that seq
    /// describes an older state (ticks have no seq, and the event's absolute
    /// values replace what the tick said).
    private mutating func discardTick(after newSeq: Int64) {
        if lastTick != nil && newSeq > tickSeq { lastTick = nil }
    }

    /// Applies a `presence` push to ``watchers``.
    public mutating func record(_ presence: PresencePush) {
        let leaving = Set(presence.left.map(\.session))
        watchers.removeAll { leaving.contains($0.session) }
        for watcher in presence.joined where !watchers.contains(where: { $0.session == watcher.session }) {
            watchers.append(watcher)
        }
        if let count = presence.watcherCount { reportedWatcherCount = count }
    }

    /// A `subscribe` for the channel was sent: hold events until its result.
    mutating func beginSync() { isSyncing = true }

    /// The `subscribe` is over (answered, or lost with the connection):
    /// returns the held events, oldest first, to be applied again.
    mutating func endSync() -> [ChannelEvent] {
        isSyncing = false
        let events = held
        held = []
        return events
    }
}
