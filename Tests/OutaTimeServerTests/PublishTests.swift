import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing

/// `publish`: fan-out to subscribers, `delivered`, and the message push.
@Suite("publish", .timeLimit(.minutes(3)))
struct PublishTests {
    static let channel = "delorean/outatime"
    static var data: [String: Any] { ["text": "Great Scott!", "gigawatts": 1.21, "tags": ["a", "b"], "none": NSNull()] }

    /// Checks one `message` push against the publisher and data.
    static func check(_ message: [String: Any], from publisher: TestClient, name: String, data: Any,
                      sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(message["channel"] as? String == channel, sourceLocation: sourceLocation)
        #expect(message[object: "from"]?["session"] as? String == publisher.session, sourceLocation: sourceLocation)
        #expect(message[object: "from"]?["name"] as? String == name, sourceLocation: sourceLocation)
        #expect(jsonEqual(message["data"], data), "data: \(describe([message]))", sourceLocation: sourceLocation)
    }

    @Test("one publish reaches three subscribers; the publisher is not subscribed")
    func threeSubscribers() throws {
        try withTestServer { server in
            let subscribers = try (1...3).map { n in try server.connectReady(name: "watcher\(n)") }
            for subscriber in subscribers {
                try subscriber.call("subscribe", ["channel": Self.channel])
            }
            let publisher = try server.connectReady(name: "Doc")
            let result = try publisher.call("publish", ["channel": Self.channel, "data": Self.data])
            #expect(result[int: "delivered"] == 3)
            for subscriber in subscribers {
                let message = try subscriber.readUntil(type: "message")
                Self.check(message, from: publisher, name: "Doc", data: Self.data)
            }
            // The publisher gets its reply and nothing else.
            #expect(try publisher.request("ping").isOK)
            #expect(publisher.pushes.isEmpty, "publisher got: \(describe(publisher.pushes))")
        }
    }

    @Test("a subscribed publisher is delivered to and counted")
    func subscribedPublisher() throws {
        try withTestServer { server in
            let subscribers = try (1...3).map { n in try server.connectReady(name: "watcher\(n)") }
            let publisher = try server.connectReady(name: "Doc")
            for client in subscribers + [publisher] {
                try client.call("subscribe", ["channel": Self.channel])
            }
            let result = try publisher.call("publish", ["channel": Self.channel, "data": "1.21 gigawatts"])
            #expect(result[int: "delivered"] == 4)
            for client in subscribers + [publisher] {
                Self.check(try client.readUntil(type: "message"), from: publisher, name: "Doc", data: "1.21 gigawatts")
            }
        }
    }

    @Test("publish to a channel nobody watches delivers 0 and creates nothing")
    func publishToNobody() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let result = try client.call("publish", ["channel": "timers/empty", "data": ["n": 1]])
            #expect(result[int: "delivered"] == 0)
            #expect((try client.call("list")[objects: "channels"])?.isEmpty == true)
        }
    }

    @Test("publish needs data; explicit null is data", arguments: [true, false])
    func publishData(explicitNull: Bool) throws {
        try withTestServer { server in
            let client = try server.connectReady()
            try client.call("subscribe", ["channel": Self.channel])
            var fields: [String: Any] = ["channel": Self.channel]
            if explicitNull { fields["data"] = NSNull() }
            let reply = try client.request("publish", fields)
            if explicitNull {
                #expect(reply.isOK, "\(describe([reply]))")
                #expect(reply[object: "result"]?[int: "delivered"] == 1)
                #expect(try client.readUntil(type: "message")["data"] is NSNull)
            } else {
                #expect(reply.errorCode == .invalidRequest)
            }
        }
    }

    @Test("messages from one publisher arrive in publish order")
    func publishOrder() throws {
        try withTestServer { server in
            let subscriber = try server.connectReady()
            try subscriber.call("subscribe", ["channel": Self.channel])
            let publisher = try server.connectReady()
            var bytes: [UInt8] = []
            for n in 1...20 {
                bytes += TestClient.framed(try TestClient.body(["type": "publish", "channel": Self.channel, "data": n]))
            }
            try publisher.sendRaw(bytes)
            var received: [Int] = []
            for _ in 1...20 {
                received.append(try subscriber.readUntil(type: "message")[int: "data"] ?? -1)
            }
            #expect(received == Array(1...20))
        }
    }

    /// Output queued in one loop iteration is not a backlog until the
    /// kernel was offered it (``Connection`` `isShort`): 40 messages from
    /// one pipelined read, each ~250 bytes queued, go far past a 1 KiB tick
    /// backlog before the iteration's flush, to a subscriber that reads
    /// everything at once. None may be dropped.
    @Test("a burst read in one iteration reaches a subscriber that reads at once, past the tick backlog")
    func burstPastTheBacklogIsNotDropped() throws {
        try withTestServer({ $0.tickBacklogBytes = 1_024 }) { server in
            let subscriber = try server.connectReady()
            try subscriber.call("subscribe", ["channel": Self.channel])
            let publisher = try server.connectReady()
            let text = String(repeating: "y", count: 150)
            var bytes: [UInt8] = []
            for n in 1...40 {
                bytes += TestClient.framed(try TestClient.body(
                    ["type": "publish", "channel": Self.channel, "data": ["n": n, "text": text]]))
            }
            try publisher.sendRaw(bytes)
            let stats = try publisher.call("stats")  // after the burst: the same connection's read
            #expect(stats[int: "messages_dropped"] == 0)
            var received: [Int] = []
            for _ in 1...40 {
                received.append(try subscriber.readUntil(type: "message")[object: "data"]?["n"] as? Int ?? -1)
            }
            #expect(received == Array(1...40))
            #expect(!subscriber.pushes.contains { $0.type == "dropped" }, "\(describe(subscriber.pushes))")
        }
    }

    @Test("an unsubscribed client gets no more messages")
    func unsubscribedGetsNothing() throws {
        try withTestServer { server in
            let stays = try server.connectReady()
            let leaves = try server.connectReady()
            try stays.call("subscribe", ["channel": Self.channel])
            try leaves.call("subscribe", ["channel": Self.channel])
            try leaves.call("unsubscribe", ["channel": Self.channel])
            let result = try stays.call("publish", ["channel": Self.channel, "data": 88])
            #expect(result[int: "delivered"] == 1)
            #expect(try stays.readUntil(type: "message")[int: "data"] == 88)
            #expect(try leaves.request("ping").isOK)
            #expect(!leaves.pushes.contains { $0.type == "message" }, "got: \(describe(leaves.pushes))")
        }
    }

    @Test("a channel emptied and subscribed again between publishes delivers to its new subscribers only")
    func channelEmptiedAndRefilled() throws {
        try withTestServer { server in
            let publisher = try server.connectReady(name: "Doc")
            let first = try server.connectReady()
            try first.call("subscribe", ["channel": Self.channel])
            #expect(try publisher.call("publish", ["channel": Self.channel, "data": 1])[int: "delivered"] == 1)
            // The last channel looked up is remembered; its list goes with
            // its last subscriber, and a new one is made for the next.
            try first.call("unsubscribe", ["channel": Self.channel])
            #expect(try publisher.call("publish", ["channel": Self.channel, "data": 2])[int: "delivered"] == 0)
            let second = try server.connectReady()
            try second.call("subscribe", ["channel": Self.channel])
            #expect(try publisher.call("publish", ["channel": Self.channel, "data": 3])[int: "delivered"] == 1)
            #expect(try second.readUntil(type: "message")[int: "data"] == 3)
            // Another channel in between, then the first one again.
            #expect(try publisher.call("publish", ["channel": "timers/other", "data": 4])[int: "delivered"] == 0)
            try second.call("unsubscribe", ["channel": Self.channel])
            let third = try server.connectReady()
            try third.call("subscribe", ["channel": Self.channel])
            #expect(try publisher.call("publish", ["channel": Self.channel, "data": 5])[int: "delivered"] == 1)
            #expect(try third.readUntil(type: "message")[int: "data"] == 5)
            #expect(first.pushes.allSatisfy { $0.type != "message" || $0[int: "data"] == 1 }, "got: \(describe(first.pushes))")
        }
    }

    @Test("a subscriber that never reads loses messages with a count, not its connection; the others keep getting served")
    func slowSubscriber() throws {
        try withTestServer({ $0.outputLimitBytes = 256 << 10 }) { server in
            let slow = try TestClient(port: server.port, receiveBuffer: 4_096)
            try slow.hello(name: "slowpoke")
            try slow.call("subscribe", ["channel": Self.channel])
            let fast = try server.connectReady(name: "fast")
            try fast.call("subscribe", ["channel": Self.channel])
            let publisher = try server.connectReady(name: "Doc")

            // 16 KB a message: past the tick backlog (64 KiB) plus any
            // kernel buffering long before 600 messages (9.6 MB).
            let payload = String(repeating: "x", count: 16_000)
            var deliveries: [Int] = []
            for _ in 0..<600 {
                let delivered = try publisher.call("publish", ["channel": Self.channel, "data": payload])[int: "delivered"] ?? -1
                deliveries.append(delivered)
                _ = try fast.readUntil(type: "message")
                if delivered == 1 { break }
            }
            #expect(deliveries.first == 2)
            #expect(deliveries.last == 1, "the slow subscriber never missed a message: \(deliveries.count) publishes")
            let stats = try publisher.call("stats")
            #expect(stats[int: "slow_consumer_closes"] == 0)
            #expect((stats[int: "messages_dropped"] ?? 0) >= 1)

            // Draining now, the slow client finds the count, and stays connected.
            let dropped = try slow.readUntil(type: "dropped", timeout: 30)
            #expect(dropped["messages"] as? Int == stats[int: "messages_dropped"])
            #expect(try slow.request("ping", timeout: 30).isOK)
            #expect(try fast.request("ping").isOK)
        }
    }
}
