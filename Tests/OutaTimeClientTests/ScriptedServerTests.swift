import Foundation
import OutaTimeClient
import OutaTimeDomain
import OutaTimeProtocol
import Testing
import UV

/// Behaviour the real server never provokes on purpose, against a
/// ``ScriptedServer`` on the test's loop.
@Suite("Scripted server")
struct ScriptedServerTests {
    static let channel = ChannelMirrorTests.channel

    static func eventPush(_ seq: Int64) -> JSONValue {
        let event = ChannelMirrorTests.event(seq)
        return .object(["type": .string("event"), "channel": .string(channel), "seq": .int(seq),
                        "event": .string(event.event), "data": event.data, "at": .string(event.at)])
    }

    static func historyJSON(_ seq: Int64) -> JSONValue {
        let event = ChannelMirrorTests.event(seq)
        return .object(["seq": .int(seq), "event": .string(event.event), "data": event.data, "at": .string(event.at)])
    }

    static let watchers: JSONValue = .array([.object(["session": .string("fake-1"), "name": .string("client-test")])])

    @Test("a seq gap re-subscribes with since; events held meanwhile are applied after the recovery")
    func gapRecovery() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.onRequest = { peer, request in
                switch request["type"] {
                case .string("hello"):
                    fake.reply(ScriptedServer.helloResult(), to: request, on: peer)
                case .string("subscribe") where request["since"] == nil:
                    fake.reply(.object(["channel": .string(Self.channel), "kind": .string("delorean"), "seq": .int(1),
                                        "watchers": Self.watchers,
                                        "state": ChannelMirrorTests.state(at: 1).json()]), to: request, on: peer)
                    fake.push(Self.eventPush(2), on: peer)
                    fake.push(Self.eventPush(4), on: peer)  // 3 is missing
                case .string("subscribe"):
                    fake.push(Self.eventPush(5), on: peer)  // arrives while the recovery is pending
                    fake.reply(.object(["channel": .string(Self.channel), "kind": .string("delorean"), "seq": .int(4),
                                        "watchers": Self.watchers, "recovered": .bool(true),
                                        "events": .array([Self.historyJSON(3), Self.historyJSON(4)])]), to: request, on: peer)
                default:
                    break
                }
            }
            let connection = clients.connect(port: fake.port)
            var events: [ChannelEvent] = []
            var syncs: [ChannelSync] = []
            connection.onEvent = { events.append($0) }
            connection.onSync = { syncs.append($0) }
            connection.subscribe(Self.channel)
            clients.expect("seq 5") { connection.mirror(Self.channel)?.seq == 5 }

            #expect(fake.requests("subscribe").map { $0["since"] } == [nil, .int(2)])
            #expect(events.map(\.seq) == [2, 3, 4, 5])
            #expect(events.map(\.replayed) == [false, true, true, false])
            #expect(syncs == [
                ChannelSync(channel: Self.channel, sinceSeq: nil, seq: 1, method: .snapshot),
                ChannelSync(channel: Self.channel, sinceSeq: 2, seq: 4, method: .recovered(events: 2)),
            ])
            #expect(connection.mirror(Self.channel)?.state == ChannelMirrorTests.state(at: 5))
            let stats = connection.stats
            #expect(stats.gaps == 1 && stats.recoveries == 1 && stats.staleEvents == 1 && stats.eventsApplied == 4)
        }
    }

    @Test("a server that stops answering pings is dropped and reconnected")
    func unresponsiveServer() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.onRequest = { peer, request in
                // Hello is answered; pings never are.
                if request["type"] == .string("hello") {
                    fake.reply(ScriptedServer.helloResult(heartbeatMs: 50), to: request, on: peer)
                }
            }
            let connection = clients.connect(port: fake.port) { $0.backoff = BackoffPolicy(initialMs: 10, maxMs: 20) }
            clients.expect("a second hello") { fake.requests("hello").count == 2 }
            #expect(connection.lastDisconnect == .unresponsive)
            // One ping per connection at a time: no pile-up while unanswered.
            #expect(fake.peers.first?.requests.filter { $0["type"] == .string("ping") }.count == 1)
        }
    }

    @Test("a server that trickles a frame it never finishes is taken for dead: bytes are not frames")
    func tricklingServer() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            let trickle = UV.Timer(loop: clients.loop)
            defer { trickle.close() }
            fake.onRequest = { peer, request in
                guard request["type"] == .string("hello"), fake.peers.count == 1 else { return }
                fake.reply(ScriptedServer.helloResult(heartbeatMs: 50), to: request, on: peer)
                peer.stream.enqueue(OwnedBytes([0, 0, 0, 200]))  // a 200-byte frame, a byte every 10 ms
                trickle.start(timeoutMs: 10, repeatMs: 10) {
                    peer.stream.enqueue(OwnedBytes([UInt8(ascii: " ")]))
                    peer.stream.flush()
                }
            }
            let connection = clients.connect(port: fake.port) { $0.backoff = BackoffPolicy(initialMs: 10, maxMs: 20) }
            clients.expect("a second hello") { fake.requests("hello").count == 2 }
            #expect(connection.lastDisconnect == .unresponsive)
        }
    }

    @Test("a large frame that keeps arriving slower than the unresponsive limit is read, not taken for a dead server")
    func slowLargeFrame() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            let trickle = UV.Timer(loop: clients.loop)
            defer { trickle.close() }
            // 192 KiB in 2 KiB pieces every 20 ms: about 2 s, twice the
            // unresponsive limit (2 × 500 ms); pings are never answered.
            let message = JSONValue.object(["type": .string("message"), "channel": .string(Self.channel),
                                            "from": .object(["session": .string("fake-2"), "name": .string("Doc")]),
                                            "data": .string(String(repeating: "x", count: 196_000))])
            fake.onRequest = { peer, request in
                guard request["type"] == .string("hello"), fake.peers.count == 1 else { return }
                fake.reply(ScriptedServer.helloResult(heartbeatMs: 500), to: request, on: peer)
                let body = Array(try! MessageEncoder().body(message))
                var header = UInt32(body.count).bigEndian
                var bytes = withUnsafeBytes(of: &header) { Array($0) } + body
                trickle.start(timeoutMs: 20, repeatMs: 20) {
                    let piece = Array(bytes.prefix(2_048))
                    bytes.removeFirst(piece.count)
                    peer.stream.enqueue(OwnedBytes(piece))
                    peer.stream.flush()
                    if bytes.isEmpty { trickle.stop() }
                }
            }
            let connection = clients.connect(port: fake.port) { $0.backoff = BackoffPolicy(initialMs: 10, maxMs: 20) }
            var received: [MessagePush] = []
            connection.onMessage = { received.append($0) }
            clients.expect("the message", timeout: 20) { !received.isEmpty || fake.requests("hello").count > 1 }
            #expect(received.first.map { if case .string(let text) = $0.data { text.count } else { 0 } } == 196_000)
            #expect(fake.requests("hello").count == 1, "reconnected: \(String(describing: connection.lastDisconnect))")
        }
    }

    @Test("subscribe(messages: false) asks for no messages, subscribe() again asks for them; a dropped push reaches onDropped")
    func messagesOption() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.onRequest = { peer, request in
                switch request["type"] {
                case .string("hello"):
                    fake.reply(ScriptedServer.helloResult(), to: request, on: peer)
                case .string("subscribe"):
                    fake.reply(.object(["channel": .string(Self.channel), "kind": .string("delorean"), "seq": .int(1),
                                        "watchers": Self.watchers,
                                        "state": ChannelMirrorTests.state(at: 1).json()]), to: request, on: peer)
                    fake.send(DroppedPush(channel: Self.channel, messages: 7), on: peer)
                default:
                    break
                }
            }
            let connection = clients.connect(port: fake.port)
            var dropped: [DroppedPush] = []
            connection.onDropped = { dropped.append($0) }
            connection.subscribe(Self.channel, messages: false)
            clients.expect("the dropped push") { !dropped.isEmpty }
            #expect(fake.requests("subscribe").first?["messages"] == .bool(false))
            #expect(dropped == [DroppedPush(channel: Self.channel, messages: 7)])
            connection.subscribe(Self.channel)
            clients.expect("a second subscribe") { fake.requests("subscribe").count == 2 }
            #expect(fake.requests("subscribe").last?["messages"] == nil)
        }
    }

    @Test("a server that breaks the protocol right after hello is retried with a growing delay, not at once each time")
    func brokenAfterHello() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.answerHello { peer in
                fake.pushRaw(Array("not json".utf8), on: peer)
            }
            let connection = clients.connect(port: fake.port) { $0.backoff = BackoffPolicy(initialMs: 5, maxMs: 1_000, jitter: 0) }
            var attempts: [Int] = []
            connection.onStateChange = { if case .reconnecting(let attempt, _) = $0 { attempts.append(attempt) } }
            clients.expect("four reconnections") { attempts.count >= 4 }
            #expect(Array(attempts.prefix(4)) == [1, 2, 3, 4], "the backoff started again after each hello: \(attempts)")
            if case .protocolViolation = connection.lastDisconnect {} else {
                Issue.record("dropped for \(String(describing: connection.lastDisconnect))")
            }
        }
    }

    @Test("a hello result of another protocol is refused, not used")
    func otherProtocol() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.onRequest = { peer, request in
                guard request["type"] == .string("hello"), case .object(var result) = ScriptedServer.helloResult() else { return }
                result["protocol"] = .int(2)
                fake.reply(.object(result), to: request, on: peer)
            }
            let connection = clients.connect(port: fake.port) { $0.reconnect = false }
            clients.expect("closed") { if case .closed = connection.state { true } else { false } }
            #expect(connection.lastDisconnect == .protocolViolation(
                "the server answered hello with protocol 2; this client speaks protocol 1"))
            #expect(connection.hello == nil)
        }
    }

    @Test("bye fails the requests in flight with disconnected, then the client reconnects")
    func byeThenReconnect() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.onRequest = { peer, request in
                switch request["type"] {
                case .string("hello"):
                    fake.reply(ScriptedServer.helloResult(), to: request, on: peer)
                case .string("get"):
                    fake.push(.object(["type": .string("bye"), "reason": .string("server_shutdown")]), on: peer)
                default:
                    break
                }
            }
            let connection = clients.connect(port: fake.port) { $0.backoff = BackoffPolicy(initialMs: 10) }
            var states: [ConnectionState] = []
            connection.onStateChange = { states.append($0) }
            var outcome: Result<JSONValue, ClientError>?
            connection.request("get", fields: ["channel": .string(Self.channel)]) { outcome = $0 }
            clients.expect("the reply to fail") { outcome != nil }
            #expect(outcome.map { if case .failure(.disconnected) = $0 { true } else { false } } == true)
            #expect(connection.lastDisconnect == .bye(.serverShutdown))
            clients.expect("ready again") { connection.isReady && fake.requests("hello").count == 2 }
            #expect(states.first == .ready)
            #expect(states.contains { if case .reconnecting(attempt: 1, _) = $0 { true } else { false } })
            #expect(states.last == .ready)
        }
    }

    @Test("a refused hello closes for good: no retry, queued requests fail")
    func helloRefused() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.onRequest = { peer, request in
                fake.fail("unauthorized", to: request, on: peer)
                fake.push(.object(["type": .string("bye"), "reason": .string("unauthorized")]), on: peer)
            }
            let connection = clients.connect(port: fake.port) { $0.backoff = BackoffPolicy(initialMs: 5) }
            var outcome: Result<JSONValue, ClientError>?
            connection.request("ping") { outcome = $0 }
            clients.expect("closed") { if case .closed = connection.state { true } else { false } }
            let refusal = DisconnectReason.helloRefused(ServerError(code: "unauthorized", message: "scripted unauthorized"))
            #expect(connection.state == .closed(refusal))
            guard case .failure(.closed(refusal)) = outcome else {
                Issue.record("expected closed, got \(String(describing: outcome))")
                return
            }
            clients.run(for: 0.1)
            #expect(fake.requests("hello").count == 1)
        }
    }

    @Test("unknown push types are ignored, even with odd fields; a frame that is not JSON drops the link")
    func unknownAndMalformedFrames() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.onRequest = { peer, request in
                switch request["type"] {
                case .string("hello"):
                    fake.reply(ScriptedServer.helloResult(), to: request, on: peer)
                case .string("ping"):
                    // A later revision's push, reusing names with other types.
                    fake.push(.object(["type": .string("weather"), "seq": .string("high"), "channel": .int(5)]), on: peer)
                    fake.reply(.object(["time": .string("2026-11-22T07:53:25Z")]), to: request, on: peer)
                case .string("get"):
                    fake.pushRaw(Array("not json".utf8), on: peer)
                default:
                    break
                }
            }
            let connection = clients.connect(port: fake.port) { $0.backoff = BackoffPolicy(initialMs: 10) }
            var pong: Result<PingResult, ClientError>?
            connection.send(.ping) { pong = $0 }
            clients.expect("the ping reply") { pong != nil }
            let time = try pong?.get().time
            #expect(time == "2026-11-22T07:53:25Z")
            #expect(connection.stats.disconnects == 0)

            var got: Result<GetResult, ClientError>?
            connection.send(.get(Self.channel)) { got = $0 }
            clients.expect("the get to fail") { got != nil }
            #expect(got.map { if case .failure(.disconnected) = $0 { true } else { false } } == true)
            guard case .protocolViolation? = connection.lastDisconnect else {
                Issue.record("expected a protocol violation, got \(String(describing: connection.lastDisconnect))")
                return
            }
            clients.expect("reconnected") { connection.isReady && fake.requests("hello").count == 2 }
        }
    }

    @Test("unsubscribing while the subscription is being made cancels it")
    func unsubscribeCancels() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.onRequest = { peer, request in
                switch request["type"] {
                case .string("hello"): fake.reply(ScriptedServer.helloResult(), to: request, on: peer)
                case .string("unsubscribe"): fake.reply(.object([:]), to: request, on: peer)
                default: break  // the subscribe is never answered
                }
            }
            let connection = clients.connect(port: fake.port)
            var subscribed: Result<ChannelMirror, ClientError>?
            var unsubscribed: Result<Void, ClientError>?
            connection.subscribe(Self.channel) { subscribed = $0 }
            clients.expect("the subscribe to go out") { !fake.requests("subscribe").isEmpty }
            connection.unsubscribe(Self.channel) { unsubscribed = $0 }
            guard case .failure(.cancelled)? = subscribed else {
                Issue.record("expected cancelled, got \(String(describing: subscribed))")
                return
            }
            clients.expect("the unsubscribe reply") { unsubscribed != nil }
            #expect(connection.mirror(Self.channel) == nil)
        }
    }

    @Test("a subscription refused with server_busy is kept and sent again at the next heartbeat")
    func busyThenRetry() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.onRequest = { peer, request in
                switch request["type"] {
                case .string("hello"):
                    fake.reply(ScriptedServer.helloResult(heartbeatMs: 40), to: request, on: peer)
                case .string("ping"):
                    fake.reply(.object(["time": .string("2026-11-22T07:53:25Z")]), to: request, on: peer)
                case .string("subscribe") where fake.requests("subscribe").count == 1:
                    fake.fail("server_busy", to: request, on: peer)
                case .string("subscribe"):
                    fake.reply(.object(["channel": .string(Self.channel), "kind": .string("delorean"), "seq": .int(1),
                                        "watchers": Self.watchers,
                                        "state": ChannelMirrorTests.state(at: 1).json()]), to: request, on: peer)
                default:
                    break
                }
            }
            let connection = clients.connect(port: fake.port)
            var outcome: Result<ChannelMirror, ClientError>?
            var failures: [String] = []
            connection.onSubscriptionFailed = { channel, _ in failures.append(channel) }
            connection.subscribe(Self.channel) { outcome = $0 }
            clients.expect("the retried subscription") { outcome != nil }
            let mirror = try outcome?.get()
            #expect(mirror?.seq == 1)
            #expect(fake.requests("subscribe").count == 2)
            #expect(failures.isEmpty)
            #expect(connection.stats.disconnects == 0)
        }
    }
}
