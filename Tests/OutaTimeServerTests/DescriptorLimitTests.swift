import Foundation
import OutaTimeProtocol
import Testing

/// The real executable under a small descriptor limit (util-linux
/// `prlimit --nofile`), sent more connections than it has descriptors:
/// it keeps serving the connections it holds, answers or closes every
/// other one quickly (never leaves one waiting for the hello timeout), and
/// serves new ones again once descriptors are free.
@Suite("descriptor exhaustion", .timeLimit(.minutes(2)))
struct DescriptorLimitTests {
    /// Descriptors the server may open: about 15 of its own (loop, inbox,
    /// SQLite, stdio), the rest for connections.
    static let descriptorLimit = 64
    /// More connections than the server has descriptors.
    static let attempts = 90
    /// Well under the 10 s hello timeout: a connection not answered or
    /// closed by then was left waiting.
    static let answerWithin = 4.0

    enum Outcome: String {
        /// `hello` answered ok.
        case served
        /// `error` + `bye` `server_busy`, then closed.
        case refused
        /// Closed without a frame (descriptors ran out: libuv's spare one).
        case closed
        /// Neither answered nor closed within ``answerWithin``.
        case waiting
    }

    /// Sends `hello` on `client` and reads what comes back.
    static func helloOutcome(_ client: TestClient) -> Outcome {
        do {
            try client.sendFrame(["type": "hello", "id": 1, "protocol": 1, "name": "crowd"])
            let first = try client.readFrame(timeout: answerWithin)
            if first["ok"] as? Bool == true { return .served }
            if first.errorCode == .serverBusy, (try? client.readFrame(timeout: answerWithin))?["reason"] as? String == "server_busy",
               client.expectClosed(timeout: answerWithin) {
                return .refused
            }
            Issue.record("unexpected answer: \(first)")
            return .waiting
        } catch TestClientError.timedOut {
            return .waiting
        } catch {
            // EOF or a reset before any frame (or a send into a closed socket).
            return .closed
        }
    }

    static func run(_ arguments: [String], expectBareCloses: Bool) throws {
        let server = try ServerProcess(arguments + ["--port", "0", "--log-level", "error"],
                                       launcher: ["/usr/bin/prlimit", "--nofile=\(descriptorLimit):\(descriptorLimit)", "--"])
        let listening = try #require(server.awaitListening(), "stderr: \(server.stderrText)")
        var held: [TestClient] = []
        var outcomes: [Outcome: Int] = [:]
        var slowest = 0.0
        for _ in 0..<attempts {
            let client = try TestClient(port: listening.port)
            let started = Date()
            let outcome = helloOutcome(client)
            slowest = max(slowest, Date().timeIntervalSince(started))
            outcomes[outcome, default: 0] += 1
            if outcome == .served { held.append(client) }
        }
        let summary = outcomes.map { "\($0.key.rawValue) \($0.value)" }.sorted().joined(separator: ", ")
        #expect(outcomes[.waiting] == nil, "\(summary); slowest \(slowest) s; stderr: \(server.stderrText)")
        #expect(held.count >= 20 && held.count < attempts, "\(summary)")
        if expectBareCloses {
            #expect((outcomes[.closed] ?? 0) >= 1, "descriptors never ran out: \(summary)")
        } else {
            #expect(outcomes[.closed] == nil && (outcomes[.refused] ?? 0) >= 1, "\(summary)")
        }

        // The connections it holds are served as before.
        for client in held { #expect(try client.request("ping").isOK) }
        let observer = held[0]
        let before = try observer.call("stats")
        #expect(before[int: "connections"] == held.count, "stats: \(before)")

        // Descriptors free up: new connections are served again.
        for client in held[held.count - 10 ..< held.count] { client.closeCleanly() }
        held.removeLast(10)
        var stats = before
        for _ in 0..<200 where stats[int: "connections"] != held.count {
            usleep(10_000)
            stats = try observer.call("stats")
        }
        #expect(stats[int: "connections"] == held.count, "stats: \(stats)")
        for _ in 0..<5 {
            let client = try TestClient(port: listening.port)
            #expect(helloOutcome(client) == .served, "stderr: \(server.stderrText)")
            held.append(client)
        }
        #expect(try observer.request("ping").isOK)
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0, "stderr: \(server.stderrText)")
    }

    @Test("--max-connections above the descriptor limit: the rest are closed at once (libuv's spare descriptor), none waits")
    func descriptorsRunOut() throws {
        try Self.run(["--max-connections", "1000"], expectBareCloses: true)
    }

    @Test("the default --max-connections (limit − min(64, limit/2)) refuses with bye server_busy before descriptors run out")
    func derivedLimitRefusesFirst() throws {
        try Self.run([], expectBareCloses: false)
    }
}
