import Foundation
import OutaTimeProtocol

/// The timer list's clock: while a countdown runs, a tick every second on
/// the countdowns' own seconds (only the newest after a stall), and a wake
/// at the next finish. `start` and `stop` make the connection a viewer.
///
/// Storage: events, with the whole list once per as many events as it holds
/// timers (at least 64), so a command costs O(1) in the list's size,
/// amortised. Running countdowns need no checkpoint of their own: the
/// server records one "alive until" moment for all of them, and after a
/// crash each resumes (paused) as of that moment.
extension TimerListState {
    /// `timers`.
    public static var kind: ChannelKind { .timers }

    /// `start` and `stop` make the connection a viewer of a countdown.
    public static let viewerActions: Set<String> = ["start", "stop"]  // stored: read on every command

    /// An empty list.
    public static func initialState(now: Date) -> TimerListState { .initial }

    /// While a countdown runs: ticks each second from the earliest running
    /// countdown's start (each tick shows a whole second gone) and a wake at
    /// the next finish.
    public func clockPlan(_ intervals: TickIntervals) -> ClockPlan {
        guard let finish = nextFinish() else { return .idle }
        return ClockPlan(ticks: TickSeries(intervalMs: 1000, anchor: earliestRunningSince, catchUp: .newestOnly),
                         nextChange: finish)
    }

    /// The remaining times of the tick's own second, not of the moment it is
    /// processed: a late tick still shows each countdown exactly one second
    /// on from the previous one. (Half a millisecond past it, so rounding
    /// never puts it before its second.)
    public mutating func tick(at time: Date) -> TickOutcome {
        TickOutcome(push: tickData(at: time.addingTimeInterval(0.0005)))
    }

    /// A stored list's running countdowns continue from their stored
    /// remaining time as of `storedAt` (``resumeCountdowns(storedAt:)``).
    public mutating func resumeLiveValues(storedAt: Date) {
        resumeCountdowns(storedAt: storedAt)
    }

    /// Each running countdown's live remaining time baked in (``checkpoint(at:)``).
    public func stored(at now: Date) -> TimerListState { checkpoint(at: now) }

    /// Reads a stored list with the server's JSON reader and the timers'
    /// wire readers: Foundation's `JSONDecoder` took 29 µs a timer, half a
    /// minute to load a million (docs/BENCHMARKS.md).
    public static func decodeStored(jsonText: String) throws(StateDecodingError) -> TimerListState {
        let value: JSONValue
        do {
            value = try JSONValue.parse(Data(jsonText.utf8))
        } catch {
            throw StateDecodingError(kind: .timers, message: "\(error)")
        }
        guard case .object(let fields) = value, case .array(let items)? = fields[CodingKeys.timers.stringValue] else {
            throw StateDecodingError(kind: .timers, message: "missing key 'timers' (an array of timers)")
        }
        var timers: [CountdownTimer] = []
        timers.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            guard let timer = CountdownTimer(json: item) else {
                throw StateDecodingError(kind: .timers,
                    message: "timers.\(index): not a timer (needs id, event, remaining_s and status)")
            }
            timers.append(timer)
        }
        let nextID = fields[CodingKeys.nextID.stringValue].flatMap { TimerJSON.int($0) }
        return TimerListState(timers: timers, nextID: nextID)
    }

    /// Its timers.
    public var itemCount: Int { list.count }

    /// A timer whose `event` and `location` are 100 characters of 400 bytes
    /// with every character a `"` (escaped, 502 bytes each) and its three
    /// integers 19 digits (PROTOCOL.md §11, "Frame bounds").
    public static var maxItemBytes: Int { 1_129 }

    /// `timer_updated` of such a timer, with all three `fields`.
    public static var maxEventDataBytes: Int { 1_182 }

    /// As many events as the list holds timers, at least 64: storing the
    /// list costs O(1) per event, amortised, and a load replays at most
    /// that many events.
    public var eventsPerStoredState: Int64 { max(64, Int64(timers.count)) }
}
