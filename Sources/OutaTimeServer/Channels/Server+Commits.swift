import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeStore

/// The server's side of a channel's ``CommitPipeline``: hand a batch to the
/// writer, and when the writer reports it, broadcast its events, answer the
/// commands that waited for it, re-plan the clock and wake the requests
/// waiting for the channel to settle.
extension Server {
    /// Commits `events` (already applied to the channel's state): they join
    /// the channel's open batch, submitted once per loop iteration
    /// (``submitOpenBatches()``); `reply` is answered once they are
    /// committed. Clocks start only after the commit, so no tick of a trip
    /// precedes the event that started it.
    func commit(_ events: [DomainEvent], on channel: Channel, at time: Date, reply: PendingReply? = nil) {
        guard !events.isEmpty else { return }
        if channel.pipeline.append(events, at: eventTimes.text(for: time), reply: reply) {
            unsubmitted.append(channel)
        }
        // A long run of pipelined commands is cut into batches of this many
        // events, so that the writer commits the first while the loop still
        // applies the rest (docs/BENCHMARKS.md).
        if channel.pipeline.openEventCount >= Self.eagerBatchEvents {
            submitOpenBatch(of: channel)
        }
    }

    /// Events in an open batch that make it go to the writer at once.
    static let eagerBatchEvents = 32

    /// Hands every channel's open batch to the writer: once per loop
    /// iteration, before the loop waits, and after a group of commits.
    func submitOpenBatches() {
        guard !unsubmitted.isEmpty else { return }
        let channels = unsubmitted
        unsubmitted = []
        for channel in channels { submitOpenBatch(of: channel) }
    }

    /// Closes `channel`'s open batch, if any, and hands it to the writer.
    private func submitOpenBatch(of channel: Channel) {
        guard let batch = channel.pipeline.close(storingStateEvery: channel.state.eventsPerStoredState) else { return }
        var stateText: JSONText?
        if batch.storesState {
            // Encoded on the writer thread, off the loop.
            let state = channel.state
            let time = clock.now
            stateText = JSONText(deferred: { state.storedText(at: time) })
        }
        let key = channel.key
        var records = batch.events.indices.map { index in
            EventRecord(channel: key, seq: batch.firstSeq + Int64(index), event: batch.events[index].name,
                        data: JSONText(batch.events[index].json.text), at: batch.times[index])
        }
        // A keyed command's key is stored with its event (one per action).
        for reply in batch.replies {
            guard let keyed = reply.keyed else { continue }
            records[Int(reply.lastSeq - batch.firstSeq)].command =
                CommandKeyRecord(key: keyed.key, action: keyed.action, result: keyed.keptResult?.text)
        }
        submit([.appendEvents(channel: key, seq: batch.lastSeq, state: stateText, events: records)],
               for: .events(channel))
    }

    /// The writer reported the channel's oldest batch in flight.
    func eventsCommitted(on channel: Channel, failure: StoreFailure?) {
        if let failure {
            let (batch, needsReload) = channel.pipeline.failed()
            var error = ProtocolError(.internal, "could not store the events of '\(channel.key)': \(failure)")
            if cluster != nil, case .refused(.seqMismatch) = failure {
                // Another node appended since this one loaded the channel:
                // its ownership moved (a handover whose last batch landed
                // after the load). JetStream refused the append, so nothing
                // was changed; memory is reloaded, and a retry runs on it.
                error = ProtocolError(.unavailable, "channel '\(channel.key)' was written by another node since this node "
                    + "took it over (its ownership just moved); nothing was changed: retry (\(failure))")
            }
            var failed = [batch]
            if needsReload, let unsent = reload(channel) { failed.append(unsent) }
            for reply in failed.flatMap(\.replies) {
                reply.fail(error, on: self)
                if let keyed = reply.keyed { keyedFailed(keyed, on: channel, error: error) }
            }
        } else {
            let batch = channel.pipeline.committed()
            counters.eventsCommitted += batch.events.count
            // Pushes are built only for a channel that has watchers now (a
            // command's issuer often has none), around the data text the
            // store got. The issuer gets its event before its reply.
            var repliesHeld = false
            if let cluster, channels[channel.key] !== channel {
                // Let go while this batch was in flight (its slot moved):
                // stored all the same. Its events reach this node's
                // subscribers through the channel's relay, which counts
                // them, so the new owner's next events follow without a
                // gap or a repeat.
                repliesHeld = relayOrphanBatch(batch, of: channel, cluster)
            } else if subscriptions.subscriberCount(of: channel.key) > 0 || hasRemoteWatchers(channel.key) {
                for (offset, event) in batch.events.enumerated() {
                    broadcast(EventMessage(channel: channel.key, seq: batch.firstSeq + Int64(offset), event: event.name,
                                           data: event.json, at: batch.times[offset]), to: channel.key,
                              seq: batch.firstSeq + Int64(offset))
                }
            }
            if !repliesHeld {
                for reply in batch.replies { reply.send(on: self) }
            }
            for reply in batch.replies {
                if let keyed = reply.keyed { keyedCommitted(keyed, seq: reply.lastSeq, on: channel) }
            }
        }
        // A tick series starts only once memory equals storage: with later
        // batches in flight the state may hold an event not yet committed
        // (a `travel` right behind this batch), and no tick may precede it.
        replanClock(channel, startingTicks: channel.pipeline.isSettled)
        if channel.pipeline.isSettled {
            for session in channel.takeWaiters() { session.resume() }
            for callback in channel.takeSettleCallbacks() { callback(nil) }
        }
    }

    /// Events with no request waiting (releases, clocks, restarts).
    func commitSystemEvents(_ events: [DomainEvent], on channel: Channel) {
        commit(events, on: channel, at: clock.now)
    }
}
