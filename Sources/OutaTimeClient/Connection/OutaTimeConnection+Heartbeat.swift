import UV

/// Heartbeats: the server closes a connection silent for 2 × `heartbeat_ms`
/// (§3), and sends no heartbeats of its own, so the client pings, and takes
/// the server for dead when even its ping replies stop.
extension OutaTimeConnection {
    /// The ping interval on `link`: the option, else half of `heartbeat_ms`.
    func heartbeatInterval(_ link: Link) -> UInt64 {
        options.heartbeatIntervalMs ?? max(link.heartbeatMs / 2, 1)
    }

    /// Silence after which the server counts as gone.
    func unresponsiveLimit(_ link: Link) -> UInt64 {
        options.unresponsiveAfterMs ?? link.heartbeatMs * 2
    }

    /// Starts pinging on a link that just became ready.
    func startHeartbeat(_ link: Link) {
        let interval = heartbeatInterval(link)
        guard interval > 0, let handles else { return }
        handles.heartbeat.start(timeoutMs: interval, repeatMs: interval) { [self] in
            beat(link)
        }
    }

    /// One heartbeat: drop a silent server, else retry subscriptions the
    /// server was too busy for, and ping unless a ping is still out (a slow
    /// reply is no reason to pile up more).
    private func beat(_ link: Link) {
        guard self.link === link, link.isReady else { return }
        let silence = loop.now &- link.lastInboundAt
        if silence >= unresponsiveLimit(link) {
            drop(.unresponsive)
            return
        }
        retryRefusedSubscriptions()
        guard !link.pingInFlight else { return }
        link.pingInFlight = true
        stats.pingsSent += 1
        internalRequest("ping", fields: [:]) { _ in
            link.pingInFlight = false
        }
    }
}
