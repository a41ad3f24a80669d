import Foundation
import NATSTestSupport
import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// Issue 25: a node's cluster status for operators. `stats`' `cluster`
/// object, the `outatime_cluster_*` families of `/metrics`, and `/healthz`
/// and `/readyz` answering 503 while the store's NATS link is down; the
/// real executable on a real nats-server.
@Suite("cluster status (stats, /metrics, /healthz)", .timeLimit(.minutes(3)))
struct ClusterStatusTests {
    /// A node `n1` on `nats` with an HTTP listener; its protocol and HTTP ports.
    static func startNode(_ nats: NATSServerProcess) throws -> (ServerProcess, port: Int, http: Int) {
        let node = try ServerProcess(ClusterModeTests.nodeArguments(nats, node: "n1") + ["--http", "127.0.0.1:0"])
        let ports = try #require(node.awaitListeners(["", "http "]), "stderr: \(node.stderrText)")
        return (node, ports[""]!, ports["http "]!)
    }

    /// One GET on a connection of its own.
    static func get(_ port: Int, _ path: String) throws -> HTTPListenerTests.Response {
        let client = try TestClient(port: port)
        return try HTTPListenerTests.get(client, path, extra: "Connection: close\r\n")
    }

    /// Polls `path` every 50 ms for up to `timeout` seconds until it answers
    /// `status`; returns the last response.
    static func poll(_ port: Int, _ path: String, until status: Int, timeout: Double = 15) throws -> HTTPListenerTests.Response {
        let deadline = Date().addingTimeInterval(timeout)
        var response = try get(port, path)
        while response.status != status && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)  // polling the server's answer, bounded
            response = try get(port, path)
        }
        return response
    }

    @Test("stats has a cluster object (node, store, nats link, channels owned); /metrics has the outatime_cluster_ families, read by the Prometheus parser; both formats agree")
    func statsAndMetrics() throws {
        let nats = try NATSServerProcess.start()
        defer { nats.stop() }
        let (node, port, http) = try Self.startNode(nats)
        defer { node.send(signal: SIGKILL) }
        let client = try TestClient(port: port)
        try client.hello()
        try client.call("command", ["channel": "laps/hill-valley", "action": "start", "args": [:]])
        try client.call("get", ["channel": "timers/clock-tower"])

        let stats = try client.call("stats")
        let cluster = try #require(stats[object: "cluster"], "\(stats)")
        #expect(cluster["node"] as? String == "n1")
        #expect(cluster["store"] as? String == "jetstream")
        #expect(cluster[int: "channels_owned"] == 2 && stats[int: "channels"] == 2, "\(stats)")
        let link = try #require(cluster[object: "nats"])
        #expect(link["connected"] as? Bool == true)
        #expect(link["url"] as? String == nats.url)
        #expect(link[int: "reconnects"] == 0 && link[int: "ack_retries"] == 0 && link[int: "lost_acks_resolved"] == 0)
        #expect(link["down_since"] == nil && link["down_s"] == nil)

        let scraped = try Self.get(http, "/metrics")
        #expect(scraped.status == 200)
        let prometheus = try #require(try client.call("stats", ["format": "prometheus"])["text"] as? String)
        for text in [scraped.body, prometheus] {
            let samples = try StatsFormatTests.parsePrometheus(text)
            #expect(samples["outatime_cluster_node_info{node=n1,store=jetstream}"] == 1, "\(samples.keys.sorted())")
            #expect(samples["outatime_cluster_nats_connected"] == 1)
            #expect(samples["outatime_cluster_nats_reconnects_total"] == 0)
            #expect(samples["outatime_cluster_nats_ack_retries_total"] == 0)
            #expect(samples["outatime_cluster_nats_lost_acks_resolved_total"] == 0)
            #expect(samples["outatime_cluster_channels_owned"] == 2)
            // No label names a channel: one series per cluster family.
            #expect(samples["outatime_cluster_slots_owned"] == 256 && samples["outatime_cluster_fenced"] == 0
                && samples["outatime_cluster_live_nodes"] == 1 && samples["outatime_cluster_forwarded_total"] == 0, "\(samples)")
            #expect(samples.keys.filter { $0.hasPrefix("outatime_cluster_") }.count == 16, "\(samples.keys.sorted())")
        }
        #expect(try Self.get(http, "/healthz").status == 200)
        #expect(try Self.get(http, "/readyz").status == 200)
    }

    @Test("a single server has no cluster object and no outatime_cluster_ family")
    func absentOnSingleServer() throws {
        try withTestServer(HTTPListenerTests.configure) { server in
            let client = try server.connectReady(name: "ops")
            let stats = try client.call("stats")
            #expect(stats["connections"] != nil && stats["cluster"] == nil, "\(stats)")
            let text = try Self.get(server.httpPort, "/metrics").body
            #expect(text.contains("outatime_connections") && !text.contains("outatime_cluster_"), "\(text)")
            let prometheus = try #require(try client.call("stats", ["format": "prometheus"])["text"] as? String)
            #expect(!prometheus.contains("outatime_cluster_"))
        }
    }

    @Test("a frozen nats-server: /healthz and /readyz 503 naming the NATS link, stats and /metrics say down, a command fails unavailable (the node fenced itself) naming the link within seconds; all back to 200 and connected after it resumes, slots reclaimed")
    func frozenNATS() throws {
        let nats = try NATSServerProcess.start()
        defer { nats.stop() }
        let (node, port, http) = try Self.startNode(nats)
        defer { node.send(signal: SIGKILL) }
        let client = try TestClient(port: port)
        try client.hello()
        try client.call("command", ["channel": "laps/outage", "action": "start", "args": [:]])

        nats.pause()
        let unhealthy = try Self.poll(http, "/healthz", until: 503)
        #expect(unhealthy.status == 503, "\(unhealthy)")
        #expect(unhealthy.body.hasPrefix("unhealthy: the NATS link to \(nats.url) is down since "), "\(unhealthy.body)")
        #expect(unhealthy.body.hasSuffix("the store cannot write\n"), "\(unhealthy.body)")
        let notReady = try Self.get(http, "/readyz")
        #expect(notReady.status == 503 && notReady.body.hasPrefix("not ready: the NATS link to \(nats.url) is down"), "\(notReady)")
        let link = try #require(try client.call("stats")[object: "cluster"]?[object: "nats"])
        #expect(link["connected"] as? Bool == false && link["down_since"] is String && link[int: "down_s"] != nil, "\(link)")
        let samples = try StatsFormatTests.parsePrometheus(try Self.get(http, "/metrics").body)
        #expect(samples["outatime_cluster_nats_connected"] == 0)

        // A command during the outage: a coded error naming the link, not a
        // hang. The node's lease lapsed with its heartbeats (it fenced
        // itself), so it refuses to act as the owner before writing.
        let started = Date()
        let refused = try client.request("command", ["channel": "laps/outage", "action": "lap", "args": [:]], timeout: 20)
        #expect(Date().timeIntervalSince(started) < 3, "the command waited \(Date().timeIntervalSince(started)) s")
        #expect(refused.errorCode == .unavailable, "\(refused)")
        #expect(refused.errorMessage?.contains("cut off from NATS: the NATS link to \(nats.url) is down") == true, "\(refused)")
        #expect(try client.request("ping").isOK, "the loop still answers")
        let stale = try client.request("get", ["channel": "laps/outage"])
        #expect(stale.errorCode == .unavailable, "\(stale)")
        #expect(try client.call("stats")[object: "cluster"]?["fenced"] as? Bool == true)

        nats.resume()
        let healthy = try Self.poll(http, "/healthz", until: 200, timeout: 20)
        #expect(healthy.status == 200 && healthy.body == "ok\n", "\(healthy)")
        // Ready again once it has its slots back (it reclaims them after the fence).
        #expect(try Self.poll(http, "/readyz", until: 200, timeout: 20).status == 200)
        let back = try #require(try client.call("stats")[object: "cluster"]?[object: "nats"])
        #expect(back["connected"] as? Bool == true && back[int: "reconnects"] == 1 && back["down_since"] == nil, "\(back)")
        let after = try StatsFormatTests.parsePrometheus(try Self.get(http, "/metrics").body)
        #expect(after["outatime_cluster_nats_connected"] == 1 && after["outatime_cluster_nats_reconnects_total"] == 1)

        // The refused lap is not shown, and the next one is stored as seq 2.
        let state = try client.call("get", ["channel": "laps/outage"])
        #expect(state[int: "seq"] == 1 && state[object: "state"]?[objects: "laps"]?.isEmpty == true, "\(state)")
        try client.call("command", ["channel": "laps/outage", "action": "lap", "args": [:]])
        #expect(try client.call("get", ["channel": "laps/outage"])[int: "seq"] == 2)
    }

    @Test("a killed nats-server: /healthz 503 at once; 200 again once a server is back on the same port and store")
    func killedNATS() throws {
        let folder = try TemporaryFolder()
        let url = URL(fileURLWithPath: folder.path("nats"))
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let port = try NATSServerProcess.freePort()
        let nats = try NATSServerProcess(port: port, folder: url)
        try nats.waitUntilReady()
        let (node, _, http) = try Self.startNode(nats)
        defer { node.send(signal: SIGKILL) }
        #expect(try Self.get(http, "/healthz").status == 200)

        nats.stop()
        let unhealthy = try Self.poll(http, "/healthz", until: 503, timeout: 5)
        #expect(unhealthy.status == 503 && unhealthy.body.contains("the NATS link to nats://127.0.0.1:\(port) is down"), "\(unhealthy)")

        let again = try NATSServerProcess(port: port, folder: url)
        defer { again.stop() }
        try again.waitUntilReady()
        let healthy = try Self.poll(http, "/healthz", until: 200, timeout: 20)
        #expect(healthy.status == 200, "\(healthy)")
    }
}
