import UV

/// Heartbeats and liveness. The server closes a connection silent for
/// 2 × `heartbeat_ms` (§3) and sends no heartbeats of its own, so the client
/// pings every ``heartbeatInterval(_:)``. To learn within seconds that the
/// path died (a cut sends no FIN), it also pings once nothing has arrived
/// for ``ClientOptions/probeAfterMs``, and takes the link for dead
/// (``DisconnectReason/unresponsive``) when nothing at all arrives within
/// ``probeTimeout()`` of that ping: a timeout derived from the round-trip
/// times measured on ping replies, as TCP derives its retransmission
/// timeout (RFC 6298), so a slow link is not mistaken for a dead one.
///
/// One one-shot timer serves it all: it is armed for the earliest of the
/// next deadlines, and each firing looks at the times again. A frame
/// arriving only stamps the link; it re-arms nothing.
extension OutaTimeConnection {
    /// The ping interval on `link`: the option, else half of `heartbeat_ms`.
    func heartbeatInterval(_ link: Link) -> UInt64 {
        options.heartbeatIntervalMs ?? max(link.heartbeatMs / 2, 1)
    }

    /// Silence (no complete frame) after which the server counts as gone
    /// whatever the probes say.
    func unresponsiveLimit(_ link: Link) -> UInt64 {
        options.unresponsiveAfterMs ?? link.heartbeatMs * 2
    }

    /// How long a liveness ping may go without anything arriving before
    /// the link is taken for dead: smoothed RTT + 4 × its variance (RFC
    /// 6298's retransmission timeout) + ``ClientOptions/probeMarginMs``, at
    /// least ``ClientOptions/probeTimeoutFloorMs``. Before any sample: the
    /// floor.
    func probeTimeout() -> UInt64 {
        guard let srtt = rtt.smoothedMs else { return options.probeTimeoutFloorMs }
        let derived = UInt64((srtt + 4 * rtt.varianceMs).rounded(.up)) + options.probeMarginMs
        return max(options.probeTimeoutFloorMs, derived)
    }

    /// Starts pinging on a link that just became ready.
    func startHeartbeat(_ link: Link) {
        // A heartbeat interval of 0 asks for no pings at all: no probes,
        // no liveness checks either (as before them).
        guard heartbeatInterval(link) > 0 else { return }
        link.lastPingAt = loop.now
        armLiveness(link)
    }

    /// Runs the checks that are due, then arms the timer for the next one.
    private func checkLiveness(_ link: Link) {
        guard self.link === link, link.isReady else { return }
        let now = loop.now
        if now &- link.lastInboundAt >= unresponsiveLimit(link) {
            drop(.unresponsive)
            return
        }
        if let sentAt = link.probeSentAt {
            if link.lastBytesAt >= sentAt {
                link.probeSentAt = nil  // something came back: alive
            } else if now &- sentAt >= probeTimeout() {
                drop(.unresponsive)
                return
            }
        }
        let probeAfter = options.probeAfterMs
        if probeAfter > 0, link.probeSentAt == nil, now &- link.lastBytesAt >= probeAfter {
            if link.pingInFlight, link.pingSentAt > link.lastBytesAt {
                // The ping still out went into this silence: it is the probe
                // (no pile-up of pings a slow server has yet to answer).
                link.probeSentAt = link.pingSentAt
            } else {
                // Nothing out, or a ping from before the last bytes (its
                // reply may be lost with the path): a fresh one.
                ping(link)
                link.probeSentAt = now
            }
        }
        if now &- link.lastPingAt >= heartbeatInterval(link) {
            retryRefusedSubscriptions()
            guard self.link === link else { return }
            // A slow reply is no reason to pile up more pings.
            if !link.pingInFlight { ping(link) } else { link.lastPingAt = now }
        }
        guard self.link === link else { return }
        armLiveness(link)
    }

    /// Arms the timer for the earliest of: the next heartbeat ping, the
    /// silence after which a probe goes out, the probe's timeout, the
    /// unresponsive limit.
    private func armLiveness(_ link: Link) {
        guard let handles else { return }
        var due = min(link.lastInboundAt &+ unresponsiveLimit(link), link.lastPingAt &+ heartbeatInterval(link))
        if let sentAt = link.probeSentAt {
            due = min(due, sentAt &+ probeTimeout())
        } else if options.probeAfterMs > 0 {
            due = min(due, link.lastBytesAt &+ options.probeAfterMs)
        }
        let now = loop.now
        handles.heartbeat.start(timeoutMs: due > now ? due - now : 1) { [self] in
            checkLiveness(link)
        }
    }

    /// Sends one `ping` and measures its round trip.
    private func ping(_ link: Link) {
        let sentAt = loop.now
        link.pingsOut += 1
        link.pingSentAt = sentAt
        link.lastPingAt = sentAt
        stats.pingsSent += 1
        internalRequest("ping", fields: [:]) { [self] result in
            link.pingsOut -= 1
            if case .success = result, self.link === link { sampleRTT(loop.now &- sentAt) }
        }
    }

    /// Folds one round-trip sample into the estimate (RFC 6298 §2:
    /// α = 1/8, β = 1/4) and shows it in ``stats``.
    func sampleRTT(_ sampleMs: UInt64) {
        let sample = Double(sampleMs)
        if let srtt = rtt.smoothedMs {
            rtt.varianceMs = 0.75 * rtt.varianceMs + 0.25 * abs(srtt - sample)
            rtt.smoothedMs = 0.875 * srtt + 0.125 * sample
        } else {
            rtt.smoothedMs = sample
            rtt.varianceMs = sample / 2
        }
        stats.smoothedRTTMs = rtt.smoothedMs
        stats.rttVarianceMs = rtt.varianceMs
    }
}

/// The round-trip estimate of a connection (kept across reconnects: the
/// path rarely changes with them).
struct RTTEstimate {
    /// The smoothed round-trip time; nil before the first sample.
    var smoothedMs: Double?
    /// The mean deviation of the samples from it.
    var varianceMs: Double = 0
}
