import UV

/// Sends every registered connection a `ping` (without id: nothing comes
/// back) once per period, for as long as it is open, whatever else it is
/// doing. The server closes a connection silent for 2 × its `heartbeat_ms`
/// (`idle_timeout`), so the period is a third of that, at most 5 s.
///
/// The pings are spread over the period (a fiftieth of the connections per
/// fiftieth of it), as independent clients' heartbeats would come: eleven
/// thousand pings in one burst every 5 s held the server's loop up for tens
/// of milliseconds and showed up as tick lateness (docs/BENCHMARKS.md).
/// Lives on its worker's loop thread only.
final class Heartbeats {
    static let slots = 50
    /// The period without word from the server (its default heartbeat_ms is 15 s).
    static let defaultPeriodMs: UInt64 = 5_000

    private let timer: Timer
    private var connections: [LoadConnection] = []
    private var slot = 0
    /// How often each connection is pinged.
    private(set) var periodMs: UInt64 = 0
    private var closed = false

    init(loop: Loop) { timer = Timer(loop: loop) }

    /// Starts pinging at the default period.
    func start() { schedule(periodMs: Self.defaultPeriodMs) }

    /// Adds a connection whose `hello` was answered (a ping before it is
    /// refused `hello_required`).
    func add(_ connection: LoadConnection) { connections.append(connection) }

    /// Adopts the server's `heartbeat_ms` (from a `hello` result): pings go
    /// out three times per required interval, at most every 5 s.
    func adopt(serverHeartbeatMs: Int) {
        let wanted = min(Self.defaultPeriodMs, UInt64(max(30, serverHeartbeatMs)) / 3)
        if wanted < periodMs { schedule(periodMs: wanted) }
    }

    /// Stops pinging for good.
    func close() {
        guard !closed else { return }
        closed = true
        timer.close()
    }

    private func schedule(periodMs: UInt64) {
        guard !closed else { return }
        self.periodMs = periodMs
        let tickMs = max(1, periodMs / UInt64(Self.slots))
        timer.start(timeoutMs: tickMs, repeatMs: tickMs) { [unowned self] in self.pingSlot() }
    }

    private func pingSlot() {
        let current = slot % Self.slots
        slot += 1
        for index in stride(from: current, to: connections.count, by: Self.slots) {
            let connection = connections[index]
            if !connection.isClosed { connection.send(#"{"type":"ping"}"#) }
        }
    }
}
