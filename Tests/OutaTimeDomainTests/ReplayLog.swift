import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeTestKit
import Testing

/// One channel's storage as the server keeps it when it stores "events
/// always, the whole state only every K events": each committed event with
/// its data as stored text and its `at` cut to the whole second, and the
/// state's stored text with every commit that brings K events or more since
/// the last stored state.
///
/// Each commit also keeps the live state it was made from, so a test can
/// rebuild the state at any commit from an older stored state plus the
/// events after it, as a restarted server does, and compare.
struct ReplayLog {
    /// One commit: the events up to it and the live state after it.
    struct Commit {
        /// Events in the log after this commit.
        let eventCount: Int
        /// The commit's time (the command's `now`), to the nanosecond.
        let time: Date
        /// The live state right after the commit.
        let live: ChannelState
        /// The state's stored text, when the state was stored with this commit.
        let storedText: String?

        /// The `at` its events are stored with: `time` cut to the second.
        var eventAt: Date { ReplayLog.wholeSecond(time) }
    }

    /// The state the channel was created with (stored at seq 0).
    let initial: ChannelState
    /// A state is stored once this many events have come since the last.
    let storeEvery: Int
    private(set) var events: [(event: DomainEvent, at: Date)] = []
    private(set) var commits: [Commit] = []
    private var storedEventCount = 0

    init(initial: ChannelState, storeEvery: Int) {
        self.initial = initial
        self.storeEvery = storeEvery
    }

    /// `ISOTime.format` then `parse`: what an event's `at` is after the store.
    static func wholeSecond(_ date: Date) -> Date {
        ISOTime.parse(ISOTime.format(date))!
    }

    /// Commits `new` (no-op when empty) made at `now`, `live` being the state after them.
    mutating func commit(_ new: [DomainEvent], live: ChannelState, at now: Date) throws {
        guard !new.isEmpty else { return }
        let at = Self.wholeSecond(now)
        for event in new {
            // The data goes through the stored text, as it does on the server.
            let text = event.json.text
            events.append((DomainEvent(event.name, try JSONValue.parse(Data(text.utf8))), at))
        }
        var stored: String?
        if events.count - storedEventCount >= storeEvery {
            stored = live.storedText(at: now)
            storedEventCount = events.count
        }
        commits.append(Commit(eventCount: events.count, time: now, live: live, storedText: stored))
    }

    /// The latest commit at or before `index` that stored the state; nil
    /// for the channel's initial state.
    func latestStored(atOrBefore index: Int) -> Int? {
        commits[...index].lastIndex { $0.storedText != nil }
    }

    /// Indices of the commits that stored the state.
    var storedCommits: [Int] { commits.indices.filter { commits[$0].storedText != nil } }

    /// The state at commit `target` as a restarted server rebuilds it: the
    /// state stored with commit `source` (nil: the initial state), then
    /// `prepare` with the `at` of the last event it includes, then every
    /// later event applied at its stored `at`.
    func replay(from source: Int?, to target: Int,
                prepare: (inout ChannelState, Date) -> Void = { _, _ in }) throws -> ChannelState {
        var state: ChannelState
        var first = 0
        if let source {
            let commit = commits[source]
            state = try ChannelState(kind: initial.kind, jsonText: commit.storedText!)
            prepare(&state, commit.eventAt)
            first = commit.eventCount
        } else {
            state = try ChannelState(kind: initial.kind, jsonText: initial.jsonText())
        }
        for (event, at) in events[first..<commits[target].eventCount] {
            state.apply(event, at: at)
        }
        return state
    }

    /// Every (stored commit or initial state, later commit) pair a server
    /// would use (the latest stored state before each commit), plus every
    /// stored state (and the initial one) replayed to the last commit.
    var replayPairs: [(source: Int?, target: Int)] {
        guard let last = commits.indices.last else { return [] }
        let sources: [Int?] = [nil] + storedCommits.map { $0 }
        return commits.indices.map { (source: latestStored(atOrBefore: $0), target: $0) }
            + sources.map { (source: $0, target: last) }
    }
}

extension SeededGenerator {
    /// A step of the clock: 0 to `maxMS` milliseconds, in seconds.
    mutating func step(maxMS: Int) -> TimeInterval {
        Double(Int.random(in: 0...maxMS, using: &self)) / 1_000
    }
}

extension ReplayLog {
    /// Rebuilds the state at every commit from the stored state before it
    /// plus the events after it, and expects exactly the live state: equal,
    /// the same snapshot `later` seconds on, and the same stored text.
    func expectExactReplays(seed: UInt64, later offsets: [TimeInterval],
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        for (source, target) in replayPairs {
            let commit = commits[target]
            let replayed = try replay(from: source, to: target)
            let context = "seed \(seed), stored at commit \(source.map(String.init) ?? "-"), replayed to \(target)"
            #expect(replayed == commit.live, "\(context)", sourceLocation: sourceLocation)
            for later in offsets {
                let now = commit.time.addingTimeInterval(later)
                #expect(replayed.snapshot(at: now) == commit.live.snapshot(at: now), "\(context), +\(later)",
                        sourceLocation: sourceLocation)
            }
            #expect(replayed.storedText(at: commit.time) == commit.live.storedText(at: commit.time), "\(context)",
                    sourceLocation: sourceLocation)
        }
    }
}
