import Foundation
import OutaTimeClient
import OutaTimeProtocol

/// Issue 27: `watch` judges the age of what it shows, not only when it
/// came. A list's tick carries `at`, the server time of the second it shows
/// (milliseconds, PROTOCOL §14); its age on arrival is our wall clock minus
/// the server clock's offset (``ServerClock``, estimated from `ping` replies
/// and the ticks' own `at`) minus `at`. A car's or a stopwatch's tick
/// carries no time: those panels keep the cadence rule alone.
extension WatchSession {
    /// The first pings after each connect go this often: 1.1 s apart, so
    /// that they land at ten phases of the server's second and narrow its
    /// whole-second `time` to about 0.1 s.
    static let clockPingFastMs: UInt64 = 1_100
    /// How many of those; afterwards one every ``clockPingSlowMs`` follows a
    /// stepped clock. A ping is 22 bytes: nothing on any link.
    static let clockPingFastCount = 10
    static let clockPingSlowMs: UInt64 = 10_100

    /// Our wall clock in ms since 1970.
    static func wallMs() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// Called on every pulse: sends the clock ping that is due, if any.
    func clockPingIfDue() {
        guard connection.isReady, connection.state == .ready, loop.now >= nextClockPingAtMs else { return }
        clockPingsSent += 1
        nextClockPingAtMs = loop.now + (clockPingsSent < Self.clockPingFastCount ? Self.clockPingFastMs : Self.clockPingSlowMs)
        let sent = Self.wallMs()
        connection.request("ping") { [weak self] result in
            guard let self, case .success(let reply) = result,
                  let text = reply["time"]?.text, let server = ISOTime.parseMilliseconds(text) else { return }
            // `time` is whole seconds unless the server writes a fraction.
            let precision: Int64 = server % 1_000 == 0 ? 1_000 : 1
            serverClock.sample(serverMs: server, precisionMs: precision, sentMs: sent, receivedMs: Self.wallMs())
        }
    }

    /// A new connection: the fast series of clock pings starts again (it
    /// may be another node, with another clock).
    func restartClockPings() {
        clockPingsSent = 0
        nextClockPingAtMs = 0
    }

    /// How old `tick` already is on arrival; 0 when it carries no `at` or
    /// nothing is known of the server's clock yet. Its `at` also bounds the
    /// offset (it was built at or after `at`).
    func ageOnArrival(_ tick: TickPush<JSONValue>) -> UInt64 {
        guard let text = tick.data["at"]?.text, let at = ISOTime.parseMilliseconds(text) else { return 0 }
        let now = Self.wallMs()
        let age = serverClock.ageMs(serverMs: at, nowMs: now) ?? 0
        serverClock.sample(serverMs: at, receivedMs: now)
        return age
    }
}
