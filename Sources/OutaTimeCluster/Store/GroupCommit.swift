import OutaTimeStore

/// Commits one lane's group of submissions, in order, on a worker thread.
///
/// Consecutive submissions that are a single `appendEvents` of the lane's
/// channel go out as ONE message (per-channel group commit, design §4.5);
/// any other submission is applied write by write. Returns each
/// submission's outcome (nil: committed), in submission order.
///
/// A submission of several writes is applied in order and stops at the
/// first failure: JetStream has no transaction across messages and keys,
/// so the writes before it stay applied (unlike SQLite's all-or-nothing).
struct GroupCommit {
    let committer: ChannelCommitter
    let lane: String
    /// Most events merged into one message, to stay well under the
    /// server's max_payload (1 MiB by default).
    let mergeLimit = 256

    func run(_ group: [Submission]) -> [StoreFailure?] {
        var outcomes = [StoreFailure?](repeating: nil, count: group.count)
        var pending: [(index: Int, batch: AppendBatch)] = []
        var pendingEvents = 0

        func flush() {
            guard !pending.isEmpty else { return }
            do {
                try committer.append(channel: lane, batches: pending.map(\.batch))
            } catch .refused(.seqMismatch(let channel, _, let stored)) {
                for (index, batch) in pending {
                    outcomes[index] = .refused(.seqMismatch(channel: channel, expected: batch.previous, stored: stored))
                }
            } catch {
                for (index, _) in pending { outcomes[index] = error }
            }
            pending = []
            pendingEvents = 0
        }

        for (index, submission) in group.enumerated() {
            if submission.writes.count == 1, case .appendEvents(let channel, let seq, let state, let events) = submission.writes[0],
               channel == lane {
                let batch = AppendBatch(seq: seq, state: state, events: events)
                do throws(StoreError) {
                    try ChannelCommitter.validate(batch, channel: channel)
                } catch {
                    outcomes[index] = .refused(error)
                    continue
                }
                if let last = pending.last, last.batch.seq != batch.previous { flush() }
                pending.append((index, batch))
                pendingEvents += events.count
                if pendingEvents >= mergeLimit { flush() }
                continue
            }
            flush()
            do throws(StoreFailure) {
                for write in submission.writes { try committer.apply(write) }
            } catch {
                outcomes[index] = error
            }
        }
        flush()
        return outcomes
    }
}
