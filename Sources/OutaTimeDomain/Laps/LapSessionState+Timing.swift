import Foundation
import OutaTimeProtocol

/// Live values of a running stopwatch: derived from the stored times and the
/// moment they were measured, never counted up by ticks.
extension LapSessionState {
    /// The current lap's time at `now` (the stored value unless running).
    public func lapElapsedMS(at now: Date) -> Int {
        lapElapsedMS + runningMS(until: MillisecondTime.milliseconds(now))
    }

    /// The time over all laps at `now` (the stored value unless running).
    public func totalElapsedMS(at now: Date) -> Int {
        totalElapsedMS + runningMS(until: MillisecondTime.milliseconds(now))
    }

    /// The state sent to clients: elapsed values as of `now` (to the
    /// millisecond) and, while running, `elapsed_as_of` = `now`, so a client
    /// can keep the display moving between ticks, and a snapshot read back
    /// with `init(json:)` is an equivalent stopwatch.
    public func wireState(at now: Date) -> any Encodable & Sendable {
        measured(at: MillisecondTime.milliseconds(now))
    }

    /// The tick broadcast every tick interval while running:
    /// `{"lap_number", "lap_elapsed_ms", "total_elapsed_ms"}`; nil otherwise.
    public func tick(at now: Date) -> JSONValue? {
        guard status == .running else { return nil }
        let live = measured(at: MillisecondTime.milliseconds(now))
        return .object([
            "lap_number": .int(Int64(live.lapNumber)),
            "lap_elapsed_ms": .int(Int64(live.lapElapsedMS)),
            "total_elapsed_ms": .int(Int64(live.totalElapsedMS)),
        ])
    }

    /// Nothing to do: a running stopwatch keeps running across a restart,
    /// because its live times come from stored moments, not from ticks.
    public mutating func recoverAfterRestart(at now: Date) -> [DomainEvent] {
        []
    }

    /// A copy whose elapsed values are measured at `milliseconds` (and
    /// `elapsed_as_of` moved there while running).
    func measured(at milliseconds: Int64) -> LapSessionState {
        guard status == .running, let base = measuringPoint else { return self }
        var copy = self
        let delta = Int(max(0, milliseconds - base))
        copy.lapElapsedMS += delta
        copy.totalElapsedMS += delta
        // Never move the measuring point backwards: a `now` before it (which
        // the monotonic server clock does not produce) measured zero above.
        if milliseconds > base {
            copy.elapsedAsOf = MillisecondTime.format(milliseconds)
        }
        return copy
    }

    /// The moment the stored elapsed values were measured, while running.
    private var measuringPoint: Int64? {
        guard status == .running, let text = elapsedAsOf ?? runningSince else { return nil }
        return MillisecondTime.parse(text)
    }

    /// Milliseconds run between the measuring point and `milliseconds`;
    /// 0 unless running, and never negative.
    private func runningMS(until milliseconds: Int64) -> Int {
        guard let base = measuringPoint else { return 0 }
        return Int(max(0, milliseconds - base))
    }
}

/// Moments on a millisecond grid, for the lap stopwatch.
///
/// Lap times are whole milliseconds, so the moments they are measured from
/// are kept as whole milliseconds since 1970 and written as ISO 8601 with
/// exactly three fractional digits (`2026-11-22T08:00:00.123Z`). Both ends of
/// every difference sit on the grid, so a difference is an exact integer and
/// nothing drifts across stops, starts and laps. The conversion is done here
/// rather than with `ISO8601FormatStyle(includingFractionalSeconds:)`, which
/// truncates the binary fraction and can turn `.123` into `.122`.
enum MillisecondTime {
    /// `date` rounded to the nearest millisecond since 1970.
    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000).rounded())
    }

    /// The ISO 8601 form of a millisecond moment, always with three
    /// fractional digits.
    static func format(_ milliseconds: Int64) -> String {
        ISOTime.format(milliseconds: milliseconds)
    }

    /// Reads an ISO 8601 time (with or without a fraction) as milliseconds
    /// since 1970; nil when it does not parse.
    static func parse(_ text: String) -> Int64? {
        ISOTime.parseMilliseconds(text)
    }
}
