import OutaTimeProtocol
import UV

/// Periodic checks and the orderly shutdown.
extension Server {
    /// Periodic checks: hello and idle timeouts, linger expiry, shutdown progress.
    func sweep() {
        assertOnLoopThread()
        let now = time.now
        // The dictionary's values, not a copy of them in an array (80 KB a
        // sweep at 10,000 connections): a connection that closes here
        // removes itself, and value semantics copy the storage only then.
        for connection in connections.values {
            connection.checkDeadlines(now: now, helloAnsweredLater: slowedHellos[connection.serial] != nil)
        }
        sweepHTTP(now: now)
        sweepRefusals(now: now)
        sweepProxyHeaderWaits(now: now)
        if case .running = phase { forgetIdleChannels(now: now) }
        throttle.forgetExpired(now: now)
        sweepRelays(now: now)
        if case .draining = phase { checkDrained() }
    }

    /// Moves the server's time `milliseconds` forward (the test seam of
    /// ``ServerClock``) and acts at once on what fell due: the sweep's
    /// deadlines (hello and idle timeouts, linger, idle channels, …) and
    /// the schedulers' wake-ups (channel clocks, request-rate windows,
    /// slowed `hello` answers); then flushes what that queued.
    func advanceClock(milliseconds: UInt64) {
        assertOnLoopThread()
        time.advance(milliseconds: milliseconds)
        sweep()
        scheduler.catchUp()
        rateWakeups.catchUp()
        helloDelays.catchUp()
        actOnReports()
    }

    /// SIGINT/SIGTERM: stop accepting and reading, let pending commits finish,
    /// then `bye server_shutdown` to everyone, flush and stop.
    func beginShutdown() {
        guard case .running = phase else { return }
        transition(to: .draining(deadline: time.now + UInt64(config.shutdownTimeoutMs)))
        logger.notice("shutting down", metadata: ["connections": "\(connections.count)", "pending_writes": "\(pendingWrites.count)"])
        listener?.close()
        tlsListener?.close()
        closeProxyHeaderWaits()
        for connection in connections.values { connection.stopReadingForShutdown() }
        recordAlive(force: true)
        checkDrained()
    }

    func checkDrained() {
        guard case .draining(let deadline) = phase else { return }
        time.refresh()
        let overdue = time.now >= deadline
        submitOpenBatches()
        if !pendingWrites.isEmpty && !overdue { return }
        for connection in Array(connections.values) { connection.close(bye: .serverShutdown) }
        guard connections.isEmpty || overdue else { return }
        transition(to: .stopped)
        for connection in Array(connections.values) { connection.destroy(reason: .serverStopped) }
        closeOwnHandles()
        logger.notice("stopped")
    }
}
