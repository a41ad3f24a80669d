import DequeModule
import Foundation
import OutaTimeProtocol

/// One channel's remembered keyed commands (protocol §6.9,
/// `idempotency_key`): each key of a command that produced a durable event,
/// with that event's seq, the action and the reply's result, so that a
/// repeat is answered with the first outcome instead of being applied again.
///
/// Bounded in count and time: a key is remembered while its event is among
/// the channel's newest `--history-limit` and younger than
/// `--idempotency-window-s`. Lookups are one dictionary access; forgetting
/// pops from the front of a queue ordered by seq (the oldest first), at most
/// as many entries as were added, so no command scans anything: a channel
/// with 10,000 timers or 1,000 keys costs a keyed command what an empty one
/// does.
struct CommandKeys {
    /// What is known of a keyed command.
    enum Outcome {
        /// Its events wait for their commit; the repeats that arrived
        /// meanwhile are answered with its outcome.
        case committing(repeats: [Repeat])
        /// Committed: the reply's result, nil when it was larger than
        /// ``maxResultBytes`` (the repeat's `result` is then `null`).
        case committed(RawJSON?)
    }

    /// A repeat waiting for the first command's commit: where its reply goes.
    struct Repeat {
        let target: PendingReply.Target
        let id: RequestID?
    }

    /// A remembered keyed command.
    struct Entry {
        /// The seq of its event.
        let seq: Int64
        /// The action it ran.
        let action: String
        /// When it ran (the server's clock).
        let at: Date
        var outcome: Outcome
    }

    /// The largest result kept for a repeat, in bytes of JSON. Every result
    /// of a timer, a dispatch or a DeLorean is far smaller; a stopwatch's
    /// state grows with its laps (about 30 bytes each), and a longer one is
    /// not kept: a channel's keys then hold at most `--history-limit` × 8 KiB.
    static let maxResultBytes = 8 * 1024

    private var entries: [String: Entry] = [:]
    /// The keys in the order of their seqs (commands are applied in seq
    /// order), for forgetting the oldest first.
    private var order: Deque<String> = []

    /// Keys remembered now.
    var count: Int { entries.count }

    /// The entry of `key` if it is still within the bounds: its event among
    /// the `historyLimit` newest of a channel at `seq`, and not older than
    /// `window`. An entry past them is forgotten here.
    mutating func lookup(_ key: String, channelSeq seq: Int64, historyLimit: Int, window: TimeInterval,
                         now: Date) -> Entry? {
        guard let entry = entries[key] else { return nil }
        if case .committed = entry.outcome, !Self.isKept(entry, channelSeq: seq, historyLimit: historyLimit,
                                                         window: window, now: now) {
            forgetOld(channelSeq: seq, historyLimit: historyLimit, window: window, now: now)
            return nil
        }
        return entry
    }

    /// Remembers a keyed command whose event (seq `seq`) was just applied
    /// and waits for its commit, and forgets the entries past the bounds.
    mutating func remember(_ key: String, seq: Int64, action: String, at: Date, historyLimit: Int,
                           window: TimeInterval) {
        forgetOld(channelSeq: seq, historyLimit: historyLimit, window: window, now: at)
        entries[key] = Entry(seq: seq, action: action, at: at, outcome: .committing(repeats: []))
        order.append(key)
    }

    /// Restores a committed keyed command read back from storage (oldest
    /// first).
    mutating func restore(_ key: String, seq: Int64, action: String, at: Date, result: RawJSON?) {
        if entries.updateValue(Entry(seq: seq, action: action, at: at, outcome: .committed(result)), forKey: key) == nil {
            order.append(key)
        }
    }

    /// A repeat of `key`, whose command is still committing, waits for it.
    mutating func wait(_ repeatReply: Repeat, for key: String) {
        guard var entry = entries[key], case .committing(var repeats) = entry.outcome else { return }
        repeats.append(repeatReply)
        entry.outcome = .committing(repeats: repeats)
        entries[key] = entry
    }

    /// The command of `key` is committed with `result`: returns the
    /// repeats that waited for it.
    mutating func committed(_ key: String, result: RawJSON?) -> [Repeat] {
        guard var entry = entries[key], case .committing(let repeats) = entry.outcome else { return [] }
        entry.outcome = .committed(result)
        entries[key] = entry
        return repeats
    }

    /// The command of `key` failed to commit: nothing was applied, so the
    /// key is forgotten (a retry runs it again). Returns the repeats that
    /// waited for it (they fail alike).
    mutating func failed(_ key: String) -> [Repeat] {
        guard let entry = entries.removeValue(forKey: key) else { return [] }
        // Its place in `order` stays until it reaches the front; a key
        // found there without an entry (or with a newer one) is skipped.
        if case .committing(let repeats) = entry.outcome { return repeats }
        return []
    }

    /// Forgets, oldest first, the committed entries past the bounds.
    private mutating func forgetOld(channelSeq seq: Int64, historyLimit: Int, window: TimeInterval, now: Date) {
        while let key = order.first {
            guard let entry = entries[key] else {
                order.removeFirst()  // failed, or replaced by a newer use of the key
                continue
            }
            guard case .committed = entry.outcome,
                  !Self.isKept(entry, channelSeq: seq, historyLimit: historyLimit, window: window, now: now)
            else { return }
            order.removeFirst()
            entries[key] = nil
        }
    }

    private static func isKept(_ entry: Entry, channelSeq seq: Int64, historyLimit: Int, window: TimeInterval,
                               now: Date) -> Bool {
        entry.seq > seq - Int64(historyLimit) && now.timeIntervalSince(entry.at) <= window
    }
}
