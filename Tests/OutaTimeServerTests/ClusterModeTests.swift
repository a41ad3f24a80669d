import Foundation
import NATSTestSupport
import OutaTimeTestSupport
import Testing

/// `outatime-server --cluster`: the real executable against a real
/// nats-server (2.15.1 from PyPI; Debian's 2.9.10 for the refusal).
@Suite("cluster mode (the executable on nats-server)", .timeLimit(.minutes(3)))
struct ClusterModeTests {
    /// The flags of a node on the single test server (one copy of each asset).
    static func nodeArguments(_ nats: NATSServerProcess, node: String) -> [String] {
        ["--port", "0", "--cluster", nats.url, "--node", node, "--cluster-replicas", "1",
         "--cluster-self-test-rounds", "20", "--log-level", "error"]
    }

    @Test("durable state lives in JetStream: hello names the node, no SQLite file is made, and another node loads what the first stored")
    func stateInJetStream() throws {
        let nats = try NATSServerProcess.start()
        defer { nats.stop() }

        let first = try ServerProcess(Self.nodeArguments(nats, node: "n1"))
        let listening = try #require(first.awaitListening(), "stderr: \(first.stderrText)")
        let client = try TestClient(port: listening.port)
        let hello = try client.hello()
        #expect(hello["node"] as? String == "n1")
        try client.call("command", ["channel": "laps/hill-valley", "action": "start", "args": [:]])
        try client.call("command", ["channel": "laps/hill-valley", "action": "lap", "args": [:]])
        try client.call("command", ["channel": "timers/clock-tower", "action": "add",
                                    "args": ["event": "Lightning", "remaining_s": 90]])
        client.closeCleanly()
        first.send(signal: SIGTERM)
        #expect(first.waitForExit() == 0, "stderr: \(first.stderrText)")
        #expect(!FileManager.default.fileExists(atPath: first.databasePath), "cluster mode made a SQLite file")

        // Another node on the same NATS: the channels, their seqs and their history.
        let second = try ServerProcess(Self.nodeArguments(nats, node: "n2"))
        let again = try #require(second.awaitListening(), "stderr: \(second.stderrText)")
        let reader = try TestClient(port: again.port)
        #expect(try reader.hello()["node"] as? String == "n2")
        let laps = try reader.call("subscribe", ["channel": "laps/hill-valley"])
        #expect(laps[int: "seq"] == 2)
        #expect((laps[object: "state"]?[objects: "laps"])?.count == 1)
        let history = try reader.call("history", ["channel": "laps/hill-valley"])
        #expect(history[objects: "events"]?.map { $0["event"] as? String } == ["started", "lap_completed"])
        let timers = try reader.call("get", ["channel": "timers/clock-tower"])
        #expect((timers[object: "state"]?[objects: "timers"])?.map { $0["event"] as? String } == ["Lightning"])
        // And it goes on from there: the next event is seq 3.
        try reader.call("command", ["channel": "laps/hill-valley", "action": "stop", "args": [:]])
        #expect(try reader.call("get", ["channel": "laps/hill-valley"])[int: "seq"] == 3)
        reader.closeCleanly()
        second.send(signal: SIGTERM)
        #expect(second.waitForExit() == 0, "stderr: \(second.stderrText)")
    }

    @Test("Debian's nats-server 2.9.10 is refused at start: exit 1, naming the version found and the one needed")
    func oldServerRefused() throws {
        let nats = try NATSServerProcess.start(binary: try NATSServerProcess.debian2910())
        defer { nats.stop() }
        let node = try ServerProcess(Self.nodeArguments(nats, node: "n1"))
        let status = node.waitForExit(timeout: 30)
        #expect(status == 1, "stderr: \(node.stderrText)")
        #expect(node.stderrText.contains("nats-server 2.9.10"), "stderr: \(node.stderrText)")
        #expect(node.stderrText.contains("2.9.21"), "stderr: \(node.stderrText)")
    }

    @Test("bad cluster flags are refused with 64, naming the flag and the value", arguments: [
        (["--cluster", "http://127.0.0.1:4222"], "--cluster 'http://127.0.0.1:4222'"),
        (["--cluster", "nats://127.0.0.1:4222", "--node", "n1.a"], "--node 'n1.a'"),
        (["--cluster", "nats://127.0.0.1:4222", "--node", String(repeating: "n", count: 33)], "1 to 32 characters"),
        (["--node", "n1"], "--node needs --cluster"),
        (["--cluster", "nats://127.0.0.1:4222", "--cluster-replicas", "0"], "--cluster-replicas 0"),
    ])
    func badFlags(arguments: [String], says: String) throws {
        let node = try ServerProcess(["--port", "0"] + arguments)
        #expect(node.waitForExit() == 64, "stderr: \(node.stderrText)")
        #expect(node.stderrText.contains(says), "stderr: \(node.stderrText)")
    }

    @Test("no NATS server answering: exit 1 naming the servers")
    func unreachable() throws {
        let port = try NATSServerProcess.freePort()
        let node = try ServerProcess(["--port", "0", "--cluster", "nats://127.0.0.1:\(port)", "--node", "n1"])
        #expect(node.waitForExit(timeout: 30) == 1, "stderr: \(node.stderrText)")
        #expect(node.stderrText.contains("no NATS server of nats://127.0.0.1:\(port) answered"), "stderr: \(node.stderrText)")
    }
}
