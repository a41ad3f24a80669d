import OutaTimeTestSupport
import Foundation
import OutaTimeClient
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Reconnection across a real server restart on the same database: the
/// client resubscribes with `since` and receives only the missed events.
@Suite("Reconnect")
struct ReconnectTests {
    static let car = "delorean/main"

    static func setDestination(_ time: String) -> ClientRequest<JSONValue> {
        .command(car, action: "set_destination", args: ["time": .string(time)])
    }

    /// Records what a connection reports, for the assertions.
    final class Recorder {
        var events: [ChannelEvent] = []
        var syncs: [ChannelSync] = []
        var states: [ConnectionState] = []

        init(_ connection: OutaTimeConnection) {
            connection.onEvent = { self.events.append($0) }
            connection.onSync = { self.syncs.append($0) }
            connection.onStateChange = { self.states.append($0) }
        }
    }

    /// Subscribes to the car and sets a destination (seq 1) on `server`.
    private func prepare(_ clients: ClientLoop, _ connection: OutaTimeConnection) throws {
        var ready = false
        connection.subscribe(Self.car) { _ in ready = true }
        clients.expect("subscribed") { ready }
        var reply: Result<JSONValue, ClientError>?
        connection.send(Self.setDestination("1955-11-12T22:04:00Z")) { reply = $0 }
        clients.expect("the first command") { reply != nil }
        #expect(connection.mirror(Self.car)?.seq == 1)
    }

    /// Checks that the reconnect was a recovery of exactly seqs 2 and 3,
    /// and that the mirror equals a fresh `get` on the new server.
    private func expectRecovered(_ connection: OutaTimeConnection, _ recorder: Recorder, port: Int) throws {
        #expect(recorder.syncs == [
            ChannelSync(channel: Self.car, sinceSeq: nil, seq: 0, method: .snapshot),
            ChannelSync(channel: Self.car, sinceSeq: 1, seq: 3, method: .recovered(events: 2)),
        ])
        #expect(recorder.events.map(\.seq) == [1, 2, 3])
        #expect(recorder.events.map(\.replayed) == [false, true, true])
        #expect(connection.stats.recoveries == 1)
        #expect(connection.stats.reloads == 0)
        #expect(connection.stats.snapshots == 1)
        #expect(connection.stats.connects == 2)
        let checker = try BlockingClient(options: ClientOptions(port: port, name: "checker"))
        defer { checker.close() }
        let fresh = try checker.send(.get(Self.car))
        let mirror = try #require(connection.mirror(Self.car))
        #expect(fresh.seq == 3 && mirror.seq == 3)
        #expect(try ChannelState(kind: .delorean, json: fresh.state) == mirror.state)
        guard case .delorean(let state)? = mirror.state else {
            Issue.record("no DeLorean state")
            return
        }
        #expect(state.destinationTime == "2015-10-21T16:29:00Z")
    }

    @Test("a restart elsewhere: the client is pointed at the new port and recovers only the missed events")
    func recoversOnNewPort() throws {
        let folder = try TemporaryFolder()
        let database = folder.path("outatime.sqlite")
        try withClientLoop { clients in
            let first = try TestServer(databasePath: database)
            let connection = clients.connect(port: first.port) {
                $0.backoff = BackoffPolicy(initialMs: 20, maxMs: 200)
            }
            let recorder = Recorder(connection)
            try prepare(clients, connection)

            // The client's loop runs during the shutdown, so it answers the
            // server's bye by closing at once.
            first.handle.shutdown()
            clients.expect("reconnecting") { if case .reconnecting = connection.state { true } else { false } }
            #expect(connection.lastDisconnect == .bye(.serverShutdown))
            first.stop()

            // While the client is away, someone else moves the car on.
            let second = try TestServer(databasePath: database)
            defer { second.stop() }
            let other = try BlockingClient(options: ClientOptions(port: second.port, name: "Doc"))
            _ = try other.send(Self.setDestination("1985-10-26T01:21:00Z"))
            _ = try other.send(Self.setDestination("2015-10-21T16:29:00Z"))
            other.close()

            connection.options.port = second.port
            connection.reconnectNow()
            clients.expect("recovered to seq 3") {
                connection.mirror(Self.car)?.seq == 3 && recorder.syncs.count == 2
            }
            try expectRecovered(connection, recorder, port: second.port)
        }
    }

    @Test("a restart on the same port: reconnect with backoff, resubscribe with since, recovered")
    func recoversOnSamePort() throws {
        let folder = try TemporaryFolder()
        let database = folder.path("outatime.sqlite")
        try withClientLoop { clients in
            let first = try TestServer(databasePath: database)
            let port = first.port
            let connection = clients.connect(port: port) {
                $0.backoff = BackoffPolicy(initialMs: 20, maxMs: 200)
            }
            let recorder = Recorder(connection)
            try prepare(clients, connection)

            first.handle.shutdown()
            clients.expect("reconnecting") { if case .reconnecting = connection.state { true } else { false } }
            first.stop()
            // Let a few attempts fail against the closed port.
            clients.expect("two failed attempts") { connection.stats.reconnectAttempts >= 3 }
            #expect(connection.lastDisconnect.map { if case .connectFailed = $0 { true } else { false } } == true)

            // The client's loop does not run while the new server starts and
            // another client adds events: it cannot reconnect before that.
            let second = try TestServer(databasePath: database, port: port)
            defer { second.stop() }
            let other = try BlockingClient(options: ClientOptions(port: port, name: "Doc"))
            _ = try other.send(Self.setDestination("1985-10-26T01:21:00Z"))
            _ = try other.send(Self.setDestination("2015-10-21T16:29:00Z"))
            other.close()

            clients.expect("recovered to seq 3") {
                connection.mirror(Self.car)?.seq == 3 && recorder.syncs.count == 2
            }
            try expectRecovered(connection, recorder, port: port)

            let delays = recorder.states.compactMap { state -> UInt64? in
                if case .reconnecting(_, let delay) = state { delay } else { nil }
            }
            #expect(delays.count >= 3)
            #expect(delays.allSatisfy { $0 <= 200 })
        }
    }

    @Test("backoff delays grow attempt by attempt and stay bounded while nothing listens")
    func backoffGrows() throws {
        try withClientLoop { clients in
            let connection = clients.connect(port: try unusedPort()) {
                $0.backoff = BackoffPolicy(initialMs: 10, maxMs: 80, jitter: 0.2)
            }
            connection.randomUnit = { 0.5 }  // no jitter: exact delays
            var reconnecting: [ConnectionState] = []
            connection.onStateChange = { state in
                if case .reconnecting = state { reconnecting.append(state) }
            }
            clients.expect("six attempts") { reconnecting.count >= 6 }
            #expect(Array(reconnecting.prefix(6)) == [
                .reconnecting(attempt: 1, delayMs: 10), .reconnecting(attempt: 2, delayMs: 20),
                .reconnecting(attempt: 3, delayMs: 40), .reconnecting(attempt: 4, delayMs: 80),
                .reconnecting(attempt: 5, delayMs: 80), .reconnecting(attempt: 6, delayMs: 80),
            ])
            #expect(connection.lastDisconnect.map { if case .connectFailed = $0 { true } else { false } } == true)
        }
    }

    @Test("without reconnect, a dropped connection closes for good")
    func noReconnect() throws {
        try withClientLoop { clients in
            let connection = clients.connect(port: try unusedPort()) { $0.reconnect = false }
            clients.expect("closed") { if case .closed = connection.state { true } else { false } }
            guard case .closed(.connectFailed?) = connection.state else {
                Issue.record("expected connectFailed, got \(connection.state)")
                return
            }
        }
    }
}
