import OutaTimeProtocol

/// The stored form of a timer list, written directly (``JSONWritable``)
/// rather than through `Codable`: a list is stored whole once per as many
/// events as it holds timers, and the `Codable` path was a tenth of a
/// restart with a million timers (docs/BENCHMARKS.md). The fields and their
/// order are `encode(to:)`'s; a test compares both.
extension CountdownTimer: JSONWritable {
    /// `{id, event, location, remaining_s, status, viewers}`, as `encode(to:)`.
    public func writeFields(to fields: inout JSONFields) {
        fields.write("id", id)
        fields.write("event", event)
        fields.write("location", location)
        fields.write("remaining_s", remainingS)
        fields.write("status", status.rawValue)
        fields.write("viewers", viewers)
    }
}

extension TimerListState: JSONWritable {
    /// `timers`, and `next_id` only when it is not implied, as `encode(to:)`.
    public func writeFields(to fields: inout JSONFields) throws {
        try fields.write("timers", list)
        if nextID != Self.impliedNextID(list) {
            fields.write("next_id", nextID)
        }
    }
}
