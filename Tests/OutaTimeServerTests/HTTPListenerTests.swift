import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// The HTTP listener (`--http`) of the real server, over TCP: `/healthz`,
/// `/readyz`, keep-alive, refusals with their status, and no effect on the
/// protocol listener's clients.
@Suite("HTTP listener", .timeLimit(.minutes(3)))
struct HTTPListenerTests {
    struct Response {
        var status: Int
        var fields: [String: String]
        var body: String
    }

    static func configure(_ config: inout ServerConfig) {
        config.http = HTTPEndpoint(port: 0)
    }

    /// Reads one response (its head, then `Content-Length` bytes unless `head`).
    static func readResponse(_ client: TestClient, head: Bool = false) throws -> Response {
        var bytes: [UInt8] = []
        var headEnd: Int?
        for _ in 0..<1_000 where headEnd == nil {
            let more = try client.readSome()
            if more.isEmpty { break }
            bytes += more
            headEnd = bytes.indices.dropLast(3).first { bytes[$0..<$0 + 4].elementsEqual("\r\n\r\n".utf8) }
        }
        let end = try #require(headEnd, "no response head in \(String(decoding: bytes, as: UTF8.self).debugDescription)")
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ")[1]) ?? -1
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            fields[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        let length = head ? 0 : Int(fields["content-length"] ?? "0") ?? 0
        var body = Array(bytes[(end + 4)...])
        for _ in 0..<1_000 where body.count < length {
            let more = try client.readSome()
            if more.isEmpty { break }
            body += more
        }
        #expect(body.count == length, "body of \(body.count) bytes, Content-Length \(length)")
        return Response(status: status, fields: fields, body: String(decoding: body, as: UTF8.self))
    }

    static func get(_ client: TestClient, _ path: String, method: String = "GET", extra: String = "") throws -> Response {
        try client.sendRaw(Array("\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n\(extra)\r\n".utf8))
        return try readResponse(client, head: method == "HEAD")
    }

    @Test("healthz and readyz answer 200 on one kept-alive connection; HEAD has no body; an unknown path is 404")
    func routes() throws {
        try withTestServer(Self.configure) { server in
            #expect(server.httpPort > 0)
            let client = try TestClient(port: server.httpPort)
            let health = try Self.get(client, "/healthz")
            #expect(health.status == 200 && health.body == "ok\n" && health.fields["connection"] == "keep-alive")
            let ready = try Self.get(client, "/readyz", method: "HEAD")
            #expect(ready.status == 200 && ready.body.isEmpty && ready.fields["content-length"] == "6")
            let missing = try Self.get(client, "/metrics/nothing")
            #expect(missing.status == 404 && missing.body.contains("/healthz"))
            let closing = try Self.get(client, "/readyz", extra: "Connection: close\r\n")
            #expect(closing.status == 200 && closing.fields["connection"] == "close")
            #expect(client.expectClosed())
        }
    }

    @Test("bad requests get their status and a close; protocol clients are unaffected", arguments: [
        ("POST /healthz HTTP/1.1\r\nHost: a\r\n\r\n", 405),
        ("GET /healthz HTTP/1.1\r\n\r\n", 400),
        ("GET /healthz HTTP/2.0\r\nHost: a\r\n\r\n", 505),
        ("\u{0}\u{0}\u{0}\u{10}{\"type\":\"ping\"}", 400),
        ("GET /healthz HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "v", count: 9_000) + "\r\n\r\n", 431),
    ])
    func refusals(request: String, status: Int) throws {
        try withTestServer(Self.configure) { server in
            let board = try server.connectReady(name: "board")
            let client = try TestClient(port: server.httpPort)
            try client.sendRaw(Array(request.utf8))
            let response = try Self.readResponse(client)
            #expect(response.status == status, "\(response)")
            #expect(response.fields["connection"] == "close")
            if status == 405 { #expect(response.fields["allow"] == "GET, HEAD") }
            #expect(client.expectClosed())
            #expect(try board.request("ping").isOK)
        }
    }

    @Test("over the HTTP connection cap new connections wait in the kernel's queue, unanswered and costing nothing, and are served in order as slots free; protocol pings still answer")
    func idleCrowd() throws {
        try withTestServer({ config in
            Self.configure(&config)
            config.maxHTTPConnectionsPerAddress = 1_000  // one address here: the global cap is tested
        }) { server in
            let board = try server.connectReady(name: "board")
            let cap = ServerConfig().maxHTTPConnections
            let held = try (0..<cap).map { _ in try TestClient(port: server.httpPort) }
            for client in held {
                #expect(try Self.get(client, "/readyz").status == 200)
            }
            // The cap is full (kept-alive connections): these wait.
            let waiting = try (0..<60).map { _ in try TestClient(port: server.httpPort) }
            for client in waiting {
                try client.sendRaw(Array("GET /readyz HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
            }
            #expect(try board.request("ping").isOK)
            // Unanswered, and not closed either, while every slot is taken.
            #expect(throws: TestClientError.self) { try waiting[0].readSome(timeout: 0.3) }
            var http = try board.call("stats")[object: "http"]
            #expect((http?["accept_pauses"] as? NSNumber)?.intValue == 1, "\(http ?? [:])")
            #expect((http?["open"] as? NSNumber)?.intValue == cap, "\(http ?? [:])")
            // Each slot freed takes the next waiting connection, which is served.
            for client in held.prefix(60) { client.closeCleanly() }
            for client in waiting {
                #expect(try Self.readResponse(client).status == 200)
            }
            #expect(try board.request("ping").isOK)
            http = try board.call("stats")[object: "http"]
            #expect((http?["refused_connections"] as? NSNumber)?.intValue == 0, "\(http ?? [:])")
            #expect((http?["requests"] as? NSNumber)?.intValue == cap + 60, "\(http ?? [:])")
        }
    }

    @Test("pipelined heads are answered only while the answers are read; a client that never reads is closed at the hello timeout")
    func pipelinedHeadsWaitForReading() throws {
        try withTestServer({ config in
            Self.configure(&config)
            config.helloTimeoutMs = 1_000
        }) { server in
            let watcher = try server.connectReady(name: "watcher")
            func http() throws -> [String: Any] { try #require(try watcher.call("stats")[object: "http"]) }
            // 3,000 scrapes of about 8 KB each in one write, never read: 24 MB
            // of answers, which the server queued whole before.
            let greedy = try TestClient(port: server.httpPort)
            try greedy.sendRaw(Array(String(repeating: "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", count: 3_000).utf8))
            var stats = try http()
            for _ in 0..<50 where stats[int: "requests"] == 0 {
                usleep(20_000)
                stats = try http()
            }
            usleep(300_000)  // time to answer every head, had it gone on
            stats = try http()
            let answered = stats[int: "requests"] ?? -1
            #expect(answered > 0 && answered < 2_000, "answered \(answered) of 3,000 heads nobody reads")
            #expect(stats[int: "open"] == 1)
            // Its answers unread for the hello timeout, it is closed, not kept.
            for _ in 0..<300 where stats[int: "open"] != 0 {
                usleep(20_000)
                stats = try http()
            }
            #expect(stats[int: "open"] == 0, "still open: \(stats)")
            #expect((stats[int: "timeouts"] ?? 0) >= 1)
            #expect(try watcher.request("ping").isOK)
        }
    }

    @Test("a head that does not arrive within the head timeout gets 408 and a close")
    func slowHead() throws {
        try withTestServer({ config in
            Self.configure(&config)
            config.httpHeadTimeoutMs = 300
        }) { server in
            let client = try TestClient(port: server.httpPort)
            try client.sendRaw(Array("GET /healthz HTTP/1.1\r\nHost:".utf8))
            let response = try Self.readResponse(client)
            #expect(response.status == 408)
            #expect(client.expectClosed())
            let idle = try TestClient(port: server.httpPort)
            #expect(idle.expectClosed(timeout: 10), "an idle HTTP connection was kept")
        }
    }

    @Test("healthz is 503 while the store's writes fail, 200 again once they succeed")
    func unhealthyStore() throws {
        let folder = try TemporaryFolder()
        let database = folder.path("outatime.sqlite")
        let server = try TestServer(databasePath: database, configure: Self.configure)
        defer { server.stop(); withExtendedLifetime(folder) {} }
        let operator_ = try server.connectReady(name: "Doc")
        let channel = "timers/health"
        let add: [String: Any] = ["channel": channel, "action": "add", "args": ["event": "check", "remaining_s": 5]]
        try operator_.call("command", add)
        let client = try TestClient(port: server.httpPort)
        #expect(try Self.get(client, "/healthz").status == 200)

        // Another process takes the database's write lock: commits fail.
        let locker = try DatabaseLocker(path: database)
        let failed = try operator_.request("command", add)
        #expect(failed.errorCode == .internal, "\(failed)")
        let unhealthy = try Self.get(client, "/healthz")
        #expect(unhealthy.status == 503 && unhealthy.body.contains("failed"), "\(unhealthy)")
        #expect(try Self.get(client, "/readyz").status == 200)
        try locker.release()

        #expect(try operator_.request("command", add).isOK)
        #expect(try Self.get(client, "/healthz").status == 200)
    }

    @Test("healthz is 503 once a command fails on a database file that cannot be written; the command got internal; 200 again after",
          .enabled(if: ImmutableFiles.supported, "needs chattr +i (root, CAP_LINUX_IMMUTABLE, a filesystem with the attribute)"))
    func unwritableDatabase() throws {
        let folder = try TemporaryFolder()
        let database = folder.path("outatime.sqlite")
        let files = [database, database + "-wal"]
        let server = try TestServer(databasePath: database, configure: Self.configure)
        defer { ImmutableFiles.set(false, files); server.stop(); withExtendedLifetime(folder) {} }
        let operator_ = try server.connectReady(name: "Doc")
        let watcher = try server.connectReady(name: "Marty")
        let channel = "timers/readonly"
        let add: [String: Any] = ["channel": channel, "action": "add", "args": ["event": "check", "remaining_s": 5]]
        try operator_.call("command", add)
        try watcher.call("subscribe", ["channel": channel])
        let http = try TestClient(port: server.httpPort)
        #expect(try Self.get(http, "/healthz").status == 200)

        #expect(ImmutableFiles.set(true, files))
        let failed = try operator_.request("command", add)
        #expect(failed.errorCode == .internal, "\(failed)")
        #expect(failed.errorMessage?.contains("could not store the events of 'timers/readonly'") == true, "\(failed)")
        let unhealthy = try Self.get(http, "/healthz")
        #expect(unhealthy.status == 503, "\(unhealthy)")
        #expect(unhealthy.body.hasPrefix("unhealthy: the store's last write failed: ") && unhealthy.body.contains("I/O error"),
                "\(unhealthy)")
        #expect(try Self.get(http, "/readyz").status == 200, "still running: readiness is not health")
        let scrape = try MetricsTests.scrape(server)
        #expect((scrape["outatime_store_writes_failed_total"] ?? 0) >= 1, "\(scrape["outatime_store_writes_failed_total"] ?? -1)")
        // The failed command changed nothing: a get still shows one timer,
        // and the watcher got no event.
        #expect((try operator_.call("get", ["channel": channel])[object: "state"]?["timers"] as? [Any])?.count == 1)
        #expect(try watcher.request("ping").isOK)
        #expect(!watcher.pushes.contains { $0.type == "event" }, "\(watcher.pushes)")

        #expect(ImmutableFiles.set(false, files))
        #expect(try operator_.request("command", add).isOK)
        #expect(try Self.get(http, "/healthz").status == 200)
        #expect(try watcher.readUntil(type: "event")["event"] as? String == "timer_added")
    }
}

/// A database file made unwritable under a running server: Linux's
/// immutable attribute (`chattr +i`, root with CAP_LINUX_IMMUTABLE, on
/// ext4/xfs/btrfs/tmpfs) refuses writes even through descriptors already
/// open, where a `chmod 0444` would not (SQLite keeps its files open; the
/// permission is checked only at open). Skipped where it is unavailable.
enum ImmutableFiles {
    /// Sets (or clears) the attribute on `paths`; false if chattr failed.
    @discardableResult
    static func set(_ immutable: Bool, _ paths: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        process.arguments = [immutable ? "+i" : "-i"] + paths
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    /// Whether an immutable file here refuses a write through a descriptor
    /// opened before.
    static let supported: Bool = {
        guard let folder = try? TemporaryFolder() else { return false }
        let path = folder.path("probe")
        guard FileManager.default.createFile(atPath: path, contents: nil) else { return false }
        let fd = open(path, O_WRONLY)
        defer { close(fd) }
        guard fd >= 0, set(true, [path]) else { return false }
        defer { set(false, [path]) }
        return write(fd, "x", 1) < 0
    }()
}

/// `--http` on the real executable, and the forms it reads.
@Suite("HTTP listener flag", .timeLimit(.minutes(3)))
struct HTTPFlagTests {
    @Test("--http 0 prints 'http listening on 127.0.0.1:PORT' after the protocol listener, and serves /readyz")
    func executable() throws {
        let server = try ServerProcess(["--port", "0", "--http", "0", "--log-level", "error"])
        #expect(server.awaitListening() != nil, "stderr: \(server.stderrText)")
        let line = try #require(server.readLine(), "stderr: \(server.stderrText)")
        #expect(line.hasPrefix("http listening on 127.0.0.1:"), "\(line)")
        let port = try #require(Int(line.split(separator: ":").last ?? ""))
        let client = try TestClient(port: port)
        #expect(try HTTPListenerTests.get(client, "/readyz").status == 200)
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0)
    }

    @Test("HOST:PORT, [IPv6]:PORT and a bare PORT are read; anything else names the value", arguments: [
        ("9090", "127.0.0.1", 9090), ("0.0.0.0:9100", "0.0.0.0", 9100), ("[::1]:0", "::1", 0),
    ])
    func parse(text: String, host: String, port: Int) throws {
        #expect(try HTTPEndpoint.parse(text) == HTTPEndpoint(host: host, port: port))
    }

    @Test("bad --http values are refused", arguments: ["", "70000", "host:", ":80", "::1:80", "[::1]80", "a:b", "9090x"])
    func badValues(text: String) {
        #expect(throws: ConfigError.self) { try HTTPEndpoint.parse(text) }
    }
}

/// `GET /metrics`, read by a real Prometheus parser (PyPI
/// `prometheus-client`, `text_string_to_metric_families`).
@Suite("metrics", .timeLimit(.minutes(3)))
struct MetricsTests {
    /// Every sample of the scrape as `name{label=value,…}` → value, as the
    /// Python parser reads it; the test fails if the parser refuses the text.
    static func scrape(_ server: TestServer) throws -> [String: Double] {
        let client = try TestClient(port: server.httpPort)
        let response = try HTTPListenerTests.get(client, "/metrics")
        #expect(response.status == 200)
        #expect(response.fields["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        return try StatsFormatTests.parsePrometheus(response.body)
    }

    @Test("/metrics parses with prometheus-client; counters move after a publish, a command and a tick")
    func countersMove() throws {
        try withTestServer({ config in
            config.http = HTTPEndpoint(port: 0)
            config.lapTickMs = 20
        }) { server in
            let before = try Self.scrape(server)
            #expect(before["outatime_build_info{version=\(OutaTimeVersion.serverName)}"] == 1, "\(before.keys.sorted())")
            #expect(before["outatime_channels{kind=laps}"] == 0)

            let operator_ = try server.connectReady(name: "Doc")
            try operator_.call("subscribe", ["channel": "laps/metrics"])
            try operator_.call("publish", ["channel": "laps/metrics", "data": ["note": "hi"]])
            try operator_.call("command", ["channel": "laps/metrics", "action": "start"])
            _ = try operator_.readUntil(type: "tick")
            let after = try Self.scrape(server)
            for name in ["outatime_messages_published_total", "outatime_events_committed_total",
                         "outatime_ticks_total", "outatime_deliveries_total", "outatime_frames_in_total"] {
                #expect((after[name] ?? 0) > (before[name] ?? 0), "\(name): \(before[name] ?? -1) → \(after[name] ?? -1)")
            }
            #expect(after["outatime_channels{kind=laps}"] == 1)
            #expect(after["outatime_connections"] == 1)
            #expect((after["outatime_tick_lateness_seconds_count"] ?? 0) >= 1)
            // Group commits, measured on the writer thread: the command's
            // (and the channel's creation) moved both histograms.
            for name in ["outatime_store_batch_size", "outatime_store_commit_seconds"] {
                let count = (after[name + "_count"] ?? 0) - (before[name + "_count"] ?? 0)
                #expect(count >= 1, "\(name)_count: \(before[name + "_count"] ?? -1) → \(after[name + "_count"] ?? -1)")
                #expect(after[name + "_bucket{le=+Inf}"] == after[name + "_count"])
            }
            #expect((after["outatime_store_commit_seconds_sum"] ?? 0) > (before["outatime_store_commit_seconds_sum"] ?? 0))
            #expect((after["outatime_store_batch_size_sum"] ?? 0) >= (after["outatime_store_batch_size_count"] ?? 1))
            #expect(after["outatime_store_writes_failed_total"] == 0)
            #expect(after["outatime_http_requests_total"] == 2, "two scrapes, this one counted as it is answered")
            #expect(after["outatime_hellos_failed_total"] == 0 && after["outatime_channels_refused_total"] == 0)
            #expect((after["outatime_process_resident_memory_bytes"] ?? 0) > 0)
        }
    }
}

/// `--log-format json`: one object a line, stable keys.
@Suite("JSON logs", .timeLimit(.minutes(3)))
struct JSONLogTests {
    @Test("every log line is one JSON object: ts, level, logger, msg first, then the metadata keys (conn.id …)")
    func jsonLines() throws {
        let server = try ServerProcess(["--port", "0", "--log-format", "json", "--log-level", "trace"])
        let listening = try #require(server.awaitListening(), "stderr: \(server.stderrText)")
        let client = try TestClient(port: listening.port)
        try client.hello(name: "logger")
        client.closeAbruptly()
        Thread.sleep(forTimeInterval: 0.3)
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0)
        let lines = server.stderrText.split(separator: "\n")
        #expect(lines.count >= 4, "\(server.stderrText)")
        var sawConnection = false
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], "\(line)")
            #expect(line.hasPrefix(#"{"ts":""#) && line.contains(#","level":""#) && line.contains(#","logger":"outatime","msg":""#),
                    "\(line)")
            #expect(object["ts"]?.hasSuffix("Z") == true)
            if object["conn.id"] != nil { sawConnection = true }
        }
        #expect(sawConnection, "no line names a connection: \(server.stderrText)")
    }

    @Test("an unknown --log-format is refused, naming it")
    func badFormat() throws {
        let server = try ServerProcess(["--port", "0", "--log-format", "xml"])
        #expect(server.waitForExit() == 64)
        #expect(server.stderrText.contains("--log-format 'xml' is not one of text, json"), "\(server.stderrText)")
    }
}
