/// One completed lap of a stopwatch session.
public struct Lap: Sendable, Equatable, Codable {
    /// 1-based lap number.
    public var lap: Int
    /// The lap's duration in milliseconds.
    public var timeMS: Int

    /// Creates a lap record.
    public init(lap: Int, timeMS: Int) {
        self.lap = lap
        self.timeMS = timeMS
    }

    enum CodingKeys: String, CodingKey {
        case lap
        case timeMS = "time_ms"
    }
}

/// A jogging lap stopwatch (`laps/<session>`, domain.md).
///
/// Elapsed values are "as of the snapshot". While running, the live values are
/// derived from `running_since` plus the stored elapsed values, so the
/// stopwatch keeps running across a server restart without ticks being stored.
public struct LapSessionState: Sendable, Equatable, Codable {
    /// The stopwatch's mode.
    public enum Status: String, Sendable, Equatable, Codable, CaseIterable {
        /// Never started, or reset.
        case idle
        /// Counting.
        case running
        /// Stopped; `start` continues from the same times.
        case paused
    }

    /// Idle, running or paused.
    public var status: Status
    /// The lap being run (0 before the first start).
    public var lapNumber: Int
    /// Time on the current lap, as of the snapshot.
    public var lapElapsedMS: Int
    /// Time over all laps, as of the snapshot.
    public var totalElapsedMS: Int
    /// Completed laps, oldest first.
    public var laps: [Lap]
    /// Mean of the completed laps; nil when there are none.
    public var averageLapMS: Int?
    /// Fastest completed lap; nil when there are none.
    public var bestLapMS: Int?
    /// Slowest completed lap; nil when there are none.
    public var worstLapMS: Int?
    /// When the current run began (ISO 8601); nil unless running.
    public var runningSince: String?

    /// Creates a state from its fields.
    public init(
        status: Status = .idle, lapNumber: Int = 0, lapElapsedMS: Int = 0,
        totalElapsedMS: Int = 0, laps: [Lap] = [], averageLapMS: Int? = nil,
        bestLapMS: Int? = nil, worstLapMS: Int? = nil, runningSince: String? = nil
    ) {
        self.status = status
        self.lapNumber = lapNumber
        self.lapElapsedMS = lapElapsedMS
        self.totalElapsedMS = totalElapsedMS
        self.laps = laps
        self.averageLapMS = averageLapMS
        self.bestLapMS = bestLapMS
        self.worstLapMS = worstLapMS
        self.runningSince = runningSince
    }

    /// A new stopwatch: idle, all zero, no laps.
    public static let initial = LapSessionState()

    enum CodingKeys: String, CodingKey {
        case status
        case lapNumber = "lap_number"
        case lapElapsedMS = "lap_elapsed_ms"
        case totalElapsedMS = "total_elapsed_ms"
        case laps
        case averageLapMS = "average_lap_ms"
        case bestLapMS = "best_lap_ms"
        case worstLapMS = "worst_lap_ms"
        case runningSince = "running_since"
    }

    /// Written by hand so that the statistics and `running_since` appear as
    /// explicit `null`s when unset (synthesized Codable would omit them).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(status, forKey: .status)
        try container.encode(lapNumber, forKey: .lapNumber)
        try container.encode(lapElapsedMS, forKey: .lapElapsedMS)
        try container.encode(totalElapsedMS, forKey: .totalElapsedMS)
        try container.encode(laps, forKey: .laps)
        try container.encode(averageLapMS, forKey: .averageLapMS)
        try container.encode(bestLapMS, forKey: .bestLapMS)
        try container.encode(worstLapMS, forKey: .worstLapMS)
        try container.encode(runningSince, forKey: .runningSince)
    }
}
