import OutaTimeProtocol

/// One completed lap of a stopwatch session.
public struct Lap: Sendable, Equatable, Codable, JSONWritable {
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

    /// The synthesised `encode(to:)`'s fields, written directly.
    public func writeFields(to fields: inout JSONFields) {
        fields.write("lap", lap)
        fields.write("time_ms", timeMS)
    }
}

/// A jogging lap stopwatch (`laps/<session>`, domain.md).
///
/// Elapsed values are "as of the snapshot". While running, the live values are
/// the stored elapsed values plus the time since `elapsed_as_of` (the last
/// start or lap), so the stopwatch keeps running across a server restart
/// without ticks being stored.
public struct LapSessionState: Sendable, Equatable, Codable, JSONWritable {
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
    /// When the current run began (ISO 8601 with milliseconds); nil unless running.
    public var runningSince: String?
    /// While running, the moment (ISO 8601 with milliseconds) at which
    /// `lapElapsedMS` and `totalElapsedMS` were measured: the last start,
    /// lap or snapshot. Live values are those plus the time since. nil unless
    /// running; a running state without it (written before the key existed)
    /// measures from `runningSince`.
    public var elapsedAsOf: String?

    /// Creates a state from its fields.
    public init(
        status: Status = .idle, lapNumber: Int = 0, lapElapsedMS: Int = 0,
        totalElapsedMS: Int = 0, laps: [Lap] = [], averageLapMS: Int? = nil,
        bestLapMS: Int? = nil, worstLapMS: Int? = nil, runningSince: String? = nil,
        elapsedAsOf: String? = nil
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
        self.elapsedAsOf = elapsedAsOf
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
        case elapsedAsOf = "elapsed_as_of"
    }

    /// Written by hand so that the statistics and `running_since` appear as
    /// explicit `null`s when unset (synthesized Codable would omit them).
    /// `elapsed_as_of` is this implementation's own key, not domain.md's: it
    /// is written only while running, so an idle or paused stopwatch has
    /// exactly domain.md's shape.
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
        try container.encodeIfPresent(elapsedAsOf, forKey: .elapsedAsOf)
    }

    /// The fields of `encode(to:)`, written directly.
    public func writeFields(to fields: inout JSONFields) throws {
        fields.write("status", status.rawValue)
        fields.write("lap_number", lapNumber)
        fields.write("lap_elapsed_ms", lapElapsedMS)
        fields.write("total_elapsed_ms", totalElapsedMS)
        try fields.write("laps", laps)
        fields.write("average_lap_ms", averageLapMS)
        fields.write("best_lap_ms", bestLapMS)
        fields.write("worst_lap_ms", worstLapMS)
        fields.write("running_since", runningSince)
        try fields.writeIfPresent("elapsed_as_of", elapsedAsOf)
    }
}

/// Average, best and worst of a lap list (the seed's table view footer).
struct LapStatistics: Sendable, Equatable {
    /// The mean lap time in whole milliseconds, rounded to the nearest (halves up).
    var averageMS: Int
    /// The fastest lap.
    var bestMS: Int
    /// The slowest lap.
    var worstMS: Int

    /// Creates statistics from their values.
    init(averageMS: Int, bestMS: Int, worstMS: Int) {
        self.averageMS = averageMS
        self.bestMS = bestMS
        self.worstMS = worstMS
    }

    /// The statistics of `laps`; nil when there are none (domain.md: null).
    init?(_ laps: [Lap]) {
        let times = laps.map(\.timeMS)
        guard let best = times.min(), let worst = times.max() else { return nil }
        let sum = times.reduce(0, +)
        // Integer rounding, halves up: lap times are never negative, so
        // (sum + n/2) / n is round-half-up without a trip through Double.
        self.init(averageMS: (sum + times.count / 2) / times.count, bestMS: best, worstMS: worst)
    }
}

extension LapSessionState {
    /// Sets average, best and worst from ``laps``. Derived rather than taken
    /// from events, so they can never disagree with the list.
    mutating func refreshStatistics() {
        let statistics = LapStatistics(laps)
        averageLapMS = statistics?.averageMS
        bestLapMS = statistics?.bestMS
        worstLapMS = statistics?.worstMS
    }
}
