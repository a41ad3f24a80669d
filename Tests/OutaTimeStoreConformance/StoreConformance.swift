import OutaTimeStore

/// One behaviour every ``DurableStore`` keeps, runnable against any backend.
public struct ConformanceCheck: Sendable, CustomStringConvertible {
    /// What the check shows, as a test's name.
    public let name: String
    /// Runs the check on a fresh harness; failed expectations are recorded
    /// with Swift Testing (`#expect`), a backend that stops answering throws.
    public let run: @Sendable (DurableStoreHarness) throws -> Void

    /// The name, as Swift Testing shows the argument.
    public var description: String { name }
}

/// The store conformance suite: the contract of ``DurableStore`` as
/// checks that assume no backend (no SQL, no files).
///
/// Run every check of ``checks`` against a backend with a fresh
/// ``DurableStoreHarness`` each, from a Swift Testing test:
///
/// ```swift
/// @Test(arguments: DurableStoreConformance.checks)
/// func conforms(_ check: ConformanceCheck) throws {
///     try check.run(DurableStoreHarness { paused, sink in try MyStore(…) })
/// }
/// ```
public enum DurableStoreConformance {
    /// Every check, reads first, then refusals, then the lifecycle.
    public static let checks: [ConformanceCheck] = [
        ConformanceCheck(name: "a created channel loads, ordered by name", run: createThenLoad),
        ConformanceCheck(name: "appends with and without a state: a reader replays after stateSeq",
                         run: appendWithAndWithoutState),
        ConformanceCheck(name: "history pages with after, limit and through", run: historyPaging),
        ConformanceCheck(name: "oldestRetainedSeq: nil without events, then the first kept", run: oldestRetainedSeq),
        ConformanceCheck(name: "meta round trip, overwritten", run: metaRoundTrip),
        ConformanceCheck(name: "saveState replaces the state as of the current seq, stored at now", run: saveState),
        ConformanceCheck(name: "a seq that does not follow is refused (seqMismatch), nothing stored",
                         run: seqMismatchRefused),
        ConformanceCheck(name: "a gap before or inside the events is refused, nothing stored", run: gapRefused),
        ConformanceCheck(name: "a submission is all or nothing", run: submissionAllOrNothing),
        ConformanceCheck(name: "an unknown channel is refused", run: unknownChannelRefused),
        ConformanceCheck(name: "dropEmptyChannel removes an empty channel, refuses one with events",
                         run: dropEmptyChannel),
        ConformanceCheck(name: "every ticket reported once, each channel's outcomes in submission order",
                         run: outcomesOnceInOrder),
        ConformanceCheck(name: "close reports everything submitted", run: closeReportsSubmitted),
        ConformanceCheck(name: "a submission after close is reported failed (writerClosed)", run: submitAfterClose),
        ConformanceCheck(name: "counters follow the outcomes: backlog, stats, text bytes", run: countersFollowOutcomes),
        ConformanceCheck(name: "a new instance on the same data loads everything reported committed",
                         run: reopenLoadsCommitted),
    ]
}

// MARK: Test data (internal: test targets keep helpers of their own)

/// The `at` of every event written by the checks.
let eventTime = "2024-01-01T00:00:00Z"

extension ChannelRecord {
    /// A new channel at seq 0 with state `{"v":0}`.
    static func empty(_ name: String) -> ChannelRecord {
        ChannelRecord(name: name, kind: String(name.prefix { $0 != "/" }), seq: 0, state: #"{"v":0}"#)
    }
}

extension EventRecord {
    /// Event `seq` of `channel`, its data naming the seq.
    static func numbered(_ channel: String, _ seq: Int64) -> EventRecord {
        EventRecord(channel: channel, seq: seq, event: "e\(seq)", data: JSONText(#"{"n":\#(seq)}"#), at: eventTime)
    }
}

extension StoreWrite {
    /// Appends events `from...to` to `channel`, with state `{"v":to}` when
    /// `withState`.
    static func append(_ channel: String, _ seqs: ClosedRange<Int64>, withState: Bool = true) -> StoreWrite {
        .appendEvents(channel: channel, seq: seqs.upperBound,
                      state: withState ? JSONText(#"{"v":\#(seqs.upperBound)}"#) : nil,
                      events: seqs.map { EventRecord.numbered(channel, $0) })
    }

    /// Creates `channel` empty.
    static func create(_ channel: String) -> StoreWrite {
        .createChannel(.empty(channel))
    }
}
