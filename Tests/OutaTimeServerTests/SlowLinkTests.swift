import Foundation
import NATSTestSupport
import OutaTimeServer
import OutaTimeTestKit
import OutaTimeTestSupport
import Testing

/// A slow consumer's `bye` goes out ahead of what is queued for it
/// (PROTOCOL.md §12): the frames not yet handed to the kernel are dropped,
/// so the client reads the reason after what its kernel buffers and the
/// one bounded write in flight hold, not after the 8 MiB queue.
@Suite("slow links: bye ahead of the queue", .timeLimit(.minutes(5)))
struct SlowConsumerByeTests {
    /// Dispatches of about 1.3 KB each (a 100-station path, a 100-character
    /// note and display name of 4-byte characters), on two boards (a board
    /// holds at most 10,000).
    static let wide = String(repeating: "\u{1D11E}", count: 100)
    static let boards = ["starport/slow-a", "starport/slow-b"]

    /// The most a slow client can read before its `bye` with the fix: what
    /// the server's kernel may buffer (`tcp_wmem`'s maximum, autotuning's
    /// ceiling), the client's small receive buffer, and the one bounded
    /// write libuv holds (256 KiB), with room for TLS records — 1 MiB.
    /// Without the fix the whole queue (> 8 MiB) comes first.
    static func byteBound() throws -> Int {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/tcp_wmem", encoding: .utf8)) ?? ""
        let kernel = text.split(whereSeparator: \.isWhitespace).last.flatMap { Int($0) } ?? 4 << 20
        let bound = kernel + (1 << 20)
        try #require(bound < ServerConfig().outputLimitBytes,
                     "tcp_wmem allows \(kernel) bytes: too close to the 8 MiB limit to tell the queue from the kernel")
        return bound
    }

    static func configure(_ config: inout ServerConfig) {
        config.heartbeatMs = 600_000  // the slow client sends nothing for a while
    }

    /// Dispatches on ``boards`` until the server has closed a slow consumer
    /// (checked with `stats` after each pipelined batch).
    static func flood(_ publisher: TestClient) throws {
        var id = 1_000
        for round in 0..<80 {
            let board = boards[round < 32 ? 0 : 1]
            var frames: [[String: Any]] = []
            for _ in 0..<250 {
                id += 1
                frames.append(["type": "command", "id": id, "channel": board, "action": "dispatch",
                               "args": ["model": "TearDrop", "path": String(repeating: "AB", count: 50),
                                        "departs_at": "2030-01-01T00:00:00Z", "note": wide]])
            }
            try publisher.sendFrames(frames)
            for _ in 0..<250 { _ = try publisher.readFrame(timeout: 30) }
            if (try publisher.call("stats")[int: "slow_consumer_closes"] ?? 0) > 0 { return }
        }
        Issue.record("20,000 dispatches did not make a slow consumer")
    }

    @Test("TCP: a client that stopped reading gets bye slow_consumer after its kernel buffers, not after the 8 MiB queue")
    func tcp() throws {
        let bound = try Self.byteBound()
        try withTestServer(Self.configure) { server in
            let slow = try TestClient(port: server.port, receiveBuffer: 16_384)
            try slow.hello(name: "slowpoke")
            for board in Self.boards { try slow.call("subscribe", ["channel": board]) }
            let publisher = try server.connectReady(name: Self.wide)
            try Self.flood(publisher)

            var bytes = 0
            var last: [String: Any] = [:]
            for _ in 0..<30_000 {
                last = try slow.readFrame(timeout: 30)
                bytes += 4 + slow.lastFrameBytes
                if last.type == "bye" { break }
            }
            #expect(last.type == "bye" && last["reason"] as? String == "slow_consumer", "\(describe([last]))")
            #expect(bytes < bound, "read \(bytes) bytes before the bye (bound \(bound))")
            #expect(slow.expectClosed())
            #expect(try publisher.request("ping").isOK)
        }
    }

    @Test("TLS: the same over TLS (plaintext waits unencrypted, so it can be dropped)")
    func tls() throws {
        let bound = try Self.byteBound()
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        try withTestServer({ config in
            Self.configure(&config)
            config.tlsPort = 0
            config.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile)
        }) { server in
            let slow = try SlowTLSClient(port: server.tlsPort, caFile: pki.caFile, channels: Self.boards)
            let publisher = try server.connectReady(name: Self.wide)
            try Self.flood(publisher)
            let (bytes, reason) = try slow.readToBye()
            #expect(reason == "slow_consumer")
            #expect(bytes < bound, "read \(bytes) bytes before the bye (bound \(bound))")
            #expect(try publisher.request("ping").isOK)
        }
    }
}

/// A TLS client in Python (`ssl`) with a 16 KiB receive buffer: says
/// hello, subscribes, then reads nothing until told to, and then counts the
/// bytes of the frames before the `bye`.
final class SlowTLSClient {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let folder: TemporaryFolder

    static let script = """
        import json, socket, ssl, struct, sys
        port, ca, channels = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        raw.connect(("127.0.0.1", port))
        raw.settimeout(60)
        tls = ssl.create_default_context(cafile=ca).wrap_socket(raw, server_hostname="localhost")
        def send(message):
            body = json.dumps(message).encode()
            tls.sendall(struct.pack(">I", len(body)) + body)
        def read(n):
            data = b""
            while len(data) < n:
                chunk = tls.recv(n - len(data))
                if not chunk:
                    raise SystemExit("closed after %d bytes" % len(data))
                data += chunk
            return data
        def frame():
            length = struct.unpack(">I", read(4))[0]
            return length + 4, json.loads(read(length))
        send({"type": "hello", "id": 1, "protocol": 1, "name": "slowpoke"})
        frame()
        for index, channel in enumerate(channels):
            send({"type": "subscribe", "id": 2 + index, "channel": channel})
            frame()
        print("ready", flush=True)
        sys.stdin.readline()
        total = 0
        while True:
            size, message = frame()
            total += size
            if message.get("type") == "bye":
                print(json.dumps({"bytes": total, "reason": message.get("reason")}), flush=True)
                break
        """

    init(port: Int, caFile: String, channels: [String]) throws {
        folder = try TemporaryFolder()
        let path = folder.path("slow_tls.py")
        try Self.script.write(toFile: path, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [path, "\(port)", caFile, channels.joined(separator: ",")]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        guard try line() == "ready" else { throw TestClientError.failed("the TLS client did not subscribe") }
    }

    deinit {
        if process.isRunning { process.terminate() }
    }

    /// Starts reading; the bytes read before the `bye`, and its reason.
    func readToBye() throws -> (bytes: Int, reason: String?) {
        input.fileHandleForWriting.write(Data("go\n".utf8))
        let text = try line()
        process.waitUntilExit()
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let bytes = object["bytes"] as? Int else {
            throw TestClientError.failed("the TLS client said: \(text)")
        }
        return (bytes, object["reason"] as? String)
    }

    private func line() throws -> String {
        var bytes: [UInt8] = []
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else { break }
            if first == UInt8(ascii: "\n") { break }
            bytes.append(first)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// `subscribe` `messages: false` leaves out `message` pushes (§6.3), and a
/// connection whose output is backed up loses `message` pushes with a
/// count instead of its connection (§12).
@Suite("slow links: messages", .timeLimit(.minutes(3)))
struct MessageDeliveryTests {
    static let channel = "laps/chatter"

    @Test("messages: false leaves out message pushes; subscribing again with true brings them back; a non-bool is refused")
    func optOut() throws {
        try withTestServer { server in
            let quiet = try server.connectReady(name: "board")
            let chatty = try server.connectReady(name: "Marty")
            let publisher = try server.connectReady(name: "Doc")
            try quiet.call("subscribe", ["channel": Self.channel, "messages": false])
            try chatty.call("subscribe", ["channel": Self.channel])

            #expect(try publisher.call("publish", ["channel": Self.channel, "data": "one"])[int: "delivered"] == 1)
            #expect(try chatty.readUntil(type: "message")["data"] as? String == "one")
            #expect(try quiet.request("ping").isOK)  // anything sent before the pong has arrived
            #expect(!quiet.transcript.contains { $0.type == "message" })

            // Events still arrive.
            try publisher.call("command", ["channel": Self.channel, "action": "start"])
            #expect(try quiet.readUntil(type: "event")["event"] as? String == "started")

            try quiet.call("subscribe", ["channel": Self.channel, "messages": true])
            #expect(try publisher.call("publish", ["channel": Self.channel, "data": "two"])[int: "delivered"] == 2)
            #expect(try quiet.readUntil(type: "message")["data"] as? String == "two")

            let refused = try quiet.request("subscribe", ["channel": Self.channel, "messages": "no"])
            #expect(refused[object: "error"]?["code"] as? String == "invalid_request")
            #expect(refused[object: "error"]?["message"] as? String == "field 'messages' must be true or false, got 'no' (a string)",
                    "\(describe([refused]))")
        }
    }

    @Test("a subscriber that stops reading loses messages with a count in a dropped push, never its connection; one that keeps up loses none")
    func droppedWithCount() throws {
        try withTestServer({ config in
            config.heartbeatMs = 600_000
            config.tickBacklogBytes = 4 << 10
            config.outputLimitBytes = 256 << 10  // messages alone would pass it many times over
        }) { server in
            let slow = try TestClient(port: server.port, receiveBuffer: 4_096)
            try slow.hello(name: "slowpoke")
            try slow.call("subscribe", ["channel": Self.channel])
            let fast = try server.connectReady(name: "fast")
            try fast.call("subscribe", ["channel": Self.channel])
            let publisher = try server.connectReady(name: "Doc")

            // 8 KB a message, until the slow subscriber has lost some, then 20 more.
            let payload = String(repeating: "x", count: 8_000)
            var published = 0
            var afterFirstDrop = -1
            while published < 3_000, afterFirstDrop < 20 {
                published += 1
                let delivered = try publisher.call("publish", ["channel": Self.channel, "data": "\(published) \(payload)"])[int: "delivered"]
                #expect(try fast.readUntil(type: "message")["data"] as? String == "\(published) \(payload)")
                if delivered == 1 || afterFirstDrop >= 0 { afterFirstDrop += 1 }
            }
            #expect(afterFirstDrop == 20, "the slow subscriber never lost a message in \(published) publishes")
            let stats = try publisher.call("stats")
            let droppedCount = stats[int: "messages_dropped"] ?? 0
            #expect(droppedCount >= 21)
            #expect(stats[int: "slow_consumer_closes"] == 0)

            // Reading now: every message either arrives or is counted, in
            // order, each count before any later message; no bye.
            var last = 0
            var counted = 0
            var uncounted = 0
            while last + uncounted < published {
                let frame = try slow.readFrame(timeout: 30)
                #expect(frame.type != "bye", "\(describe([frame]))")
                if frame.type == "message", let text = frame["data"] as? String, let number = Int(text.prefix { $0 != " " }) {
                    #expect(number == last + 1 + uncounted, "message \(number) after \(last) and \(uncounted) counted as dropped")
                    last = number
                    uncounted = 0
                } else if frame.type == "dropped" {
                    #expect(frame["channel"] as? String == Self.channel)
                    let count = frame["messages"] as? Int ?? 0
                    counted += count
                    uncounted += count
                }
            }
            #expect(counted == droppedCount, "dropped pushes counted \(counted); stats say \(droppedCount)")
            // Once drained, messages flow again.
            #expect(try publisher.call("publish", ["channel": Self.channel, "data": "again"])[int: "delivered"] == 2)
            #expect(try slow.readUntil(type: "message")["data"] as? String == "again")
            #expect(!fast.transcript.contains { $0.type == "dropped" })
            #expect(fast.transcript.filter { $0.type == "message" }.count == published)
        }
    }
}

/// `messages: false` in cluster mode: the node a client is connected to
/// delivers relayed messages per subscriber, so it applies the choice.
@Suite("slow links: messages in cluster mode", .timeLimit(.minutes(3)))
struct ClusterMessageOptionTests {
    @Test("messages: false on a node that relays the channel: no message pushes there; subscribing again brings them back")
    func optOutRelayed() throws {
        let nats = try NATSServerProcess.start()
        defer { nats.stop() }
        let nodes = try ["m1", "m2"].map { try ClusterNodesTests.Node($0, nats: nats) }
        defer { for node in nodes { node.process.send(signal: SIGTERM); _ = node.process.waitForExit() } }
        try ClusterNodesTests.awaitSettled(nodes)

        let channel = "laps/cluster-chatter"
        let creator = try nodes[0].client("Doc")
        try creator.call("subscribe", ["channel": channel])
        try creator.call("unsubscribe", ["channel": channel])
        let owner = try ClusterNodesTests.owner(of: channel, among: nodes)
        let relaying = try #require(nodes.first { $0 !== owner })
        let quiet = try relaying.client("board")
        let chatty = try relaying.client("Marty")
        let publisher = try owner.client("Doc")
        try quiet.call("subscribe", ["channel": channel, "messages": false])
        try chatty.call("subscribe", ["channel": channel])

        try publisher.call("publish", ["channel": channel, "data": "one"])
        #expect(try chatty.readUntil(type: "message")["data"] as? String == "one")
        #expect(try quiet.request("ping").isOK)
        #expect(!quiet.transcript.contains { $0.type == "message" }, "\(describe(quiet.transcript))")

        try quiet.call("subscribe", ["channel": channel, "messages": true])
        try publisher.call("publish", ["channel": channel, "data": "two"])
        #expect(try quiet.readUntil(type: "message")["data"] as? String == "two")
        #expect(try chatty.readUntil(type: "message")["data"] as? String == "two")
    }
}
