import Dispatch
import Foundation
import NATS
import Synchronization

/// The heartbeat and decision threads and the watches of a ``ClusterMembership``.
extension ClusterMembership {
    /// Puts the heartbeat once; its send time extends the lease when acked.
    func beat() throws(NATSError) {
        let sent = ContinuousClock.now
        let count = beatCount.add(1, ordering: .relaxed).newValue
        let value = Array("{\"node\":\"\(options.node)\",\"beat\":\(count)}".utf8)
        let revision: UInt64
        do throws(NATSError) {
            revision = try beats.put(options.node, value: value)
        } catch {
            state.withLock { $0.heartbeatFailed() }
            throw error
        }
        state.withLock { $0.heartbeatAcked(sentAt: sent, revision: revision) }
    }

    func heartbeatLoop() {
        while !stopping.load(ordering: .acquiring) {
            let sent = ContinuousClock.now
            if !heartbeatsPaused.load(ordering: .acquiring) {
                try? beat()
                wakeDecision()
            }
            let next = sent + options.heartbeatInterval
            let wait = max(next - .now, .zero)
            _ = heartbeatWake.wait(timeout: .now() + .nanoseconds(Int(wait.milliseconds * 1_000_000) + 1))
        }
    }

    func decisionLoop() {
        while !stopping.load(ordering: .acquiring) {
            decisionWakePending.store(false, ordering: .releasing)
            decide()
            _ = decisionWake.wait(timeout: .now() + .milliseconds(Int(options.tick.milliseconds)))
        }
    }

    /// Wakes the decision thread, once however many events arrive before it runs.
    func wakeDecision() {
        if !decisionWakePending.exchange(true, ordering: .acquiringAndReleasing) { decisionWake.signal() }
    }

    /// One step: the fence, the re-read, or the claims; then the report.
    private func decide() {
        let (step, generation) = state.withLock { state in (state.step(at: .now), state.generation) }
        switch step {
        case .none: break
        case .restartWatches:
            stopWatches()
            do { try startWatches(generation: generation) } catch {
                // The watches come back at the next re-read: stay fenced until then.
                state.withLock { $0.watchesFailed() }
            }
        case .write(let writes):
            for write in writes {
                guard !stopping.load(ordering: .acquiring), state.withLock({ $0.leaseValidUntil(at: .now) != nil }) else { break }
                guard perform(write) else { break }
            }
        }
        report()
    }

    /// Makes one revision-checked write; false when NATS failed (not the check).
    @discardableResult
    func perform(_ write: SlotWrite) -> Bool {
        let key = SlotMap.key(of: write.slot)
        do throws(NATSError) {
            let revision = write.expectedRevision == 0
                ? try owners.create(key, value: write.record.encoded)
                : try owners.update(key, value: write.record.encoded, expectedRevision: write.expectedRevision)
            state.withLock { $0.stored(write, revision: revision, at: .now) }
            return true
        } catch {
            switch error {
            case .wrongLastSequence, .keyExists:
                state.withLock { $0.refused(write) }
                return true
            default:
                return false
            }
        }
    }

    /// Calls `onChange` when the snapshot differs from the last one reported.
    func report() {
        let snapshot = self.snapshot
        let changed = lastReported.withLock { last in
            defer { last = snapshot }
            return last != snapshot
        }
        if changed { onChange(snapshot) }
    }

    func startWatches(generation: Int) throws(NATSError) {
        let ownersWatch = try owners.watch { [weak self] event in
            self?.state.withLock { $0.apply(.init(event), from: .owners, generation: generation, at: .now) }
            self?.wakeDecision()
        }
        let nodesWatch: KeyValueWatch
        do throws(NATSError) {
            nodesWatch = try nodes.watch { [weak self] event in
                self?.state.withLock { $0.apply(.init(event), from: .nodes, generation: generation, at: .now) }
                self?.wakeDecision()
            }
        } catch {
            ownersWatch.stop()
            throw error
        }
        watches.withLock { $0 = [ownersWatch, nodesWatch] }
    }

    func stopWatches() {
        let running = watches.withLock { watches in
            defer { watches = [] }
            return watches
        }
        for watch in running { watch.stop() }
    }
}
