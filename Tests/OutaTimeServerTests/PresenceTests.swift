import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing

/// `presence` pushes: joined on subscribe, left on unsubscribe and on any
/// kind of disconnect, sent to the other watchers only.
@Suite("presence", .timeLimit(.minutes(3)))
struct PresenceTests {
    static let channel = "timers/kitchen"

    /// Two ready clients, A (Alice) subscribed first.
    static func pair(_ server: TestServer) throws -> (a: TestClient, b: TestClient) {
        let a = try server.connectReady(name: "Alice")
        try a.call("subscribe", ["channel": channel])
        let b = try server.connectReady(name: "Bob")
        return (a, b)
    }

    /// Checks a presence push names exactly `joined` and `left`.
    static func check(_ push: [String: Any], joined: [TestClient], left: [TestClient],
                      sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(push["channel"] as? String == channel, sourceLocation: sourceLocation)
        #expect(push[objects: "joined"] != nil && push[objects: "left"] != nil,
                "presence needs both lists: \(describe([push]))", sourceLocation: sourceLocation)
        #expect(push.sessions("joined") == joined.map { $0.session ?? "?" }, sourceLocation: sourceLocation)
        #expect(push.sessions("left") == left.map { $0.session ?? "?" }, sourceLocation: sourceLocation)
    }

    @Test("B subscribing sends A presence joined [B] with B's name")
    func joined() throws {
        try withTestServer { server in
            let (a, b) = try Self.pair(server)
            let result = try b.call("subscribe", ["channel": Self.channel])
            #expect(Set(result.sessions("watchers")) == Set([a.session, b.session].compactMap { $0 }))

            let push = try a.readUntil(type: "presence")
            Self.check(push, joined: [b], left: [])
            #expect(push[objects: "joined"]?.first?["name"] as? String == "Bob")
            // The subscriber itself learns the watchers from its result, not a push.
            #expect(try b.request("ping").isOK)
            #expect(!b.pushes.contains { $0.type == "presence" }, "B got: \(describe(b.pushes))")
        }
    }

    @Test("a second subscribe sends no presence")
    func idempotentSubscribeIsSilent() throws {
        try withTestServer { server in
            let (a, b) = try Self.pair(server)
            try b.call("subscribe", ["channel": Self.channel])
            Self.check(try a.readUntil(type: "presence"), joined: [b], left: [])
            try b.call("subscribe", ["channel": Self.channel])
            #expect(try a.request("ping").isOK)
            #expect(!a.pushes.contains { $0.type == "presence" }, "A got: \(describe(a.pushes))")
        }
    }

    @Test("B unsubscribing sends A presence left [B]")
    func leftOnUnsubscribe() throws {
        try withTestServer { server in
            let (a, b) = try Self.pair(server)
            try b.call("subscribe", ["channel": Self.channel])
            Self.check(try a.readUntil(type: "presence"), joined: [b], left: [])
            try b.call("unsubscribe", ["channel": Self.channel])
            Self.check(try a.readUntil(type: "presence"), joined: [], left: [b])
        }
    }

    @Test("B disconnecting abruptly (reset) sends A presence left [B]")
    func leftOnReset() throws {
        try withTestServer { server in
            let (a, b) = try Self.pair(server)
            try b.call("subscribe", ["channel": Self.channel])
            Self.check(try a.readUntil(type: "presence"), joined: [b], left: [])
            let gone = b.session
            b.closeAbruptly()
            let push = try a.readUntil(type: "presence")
            #expect(push.sessions("left") == [gone ?? "?"])
            #expect(push.sessions("joined").isEmpty)
            let watchers = try a.call("subscribe", ["channel": Self.channel]).sessions("watchers")
            #expect(watchers == [a.session ?? "?"])
        }
    }

    @Test("B closing cleanly (EOF) sends A presence left [B]")
    func leftOnClose() throws {
        try withTestServer { server in
            let (a, b) = try Self.pair(server)
            try b.call("subscribe", ["channel": Self.channel])
            Self.check(try a.readUntil(type: "presence"), joined: [b], left: [])
            b.closeCleanly()
            Self.check(try a.readUntil(type: "presence"), joined: [], left: [b])
        }
    }

    @Test("presence goes only to watchers of that channel")
    func presenceScopedToChannel() throws {
        try withTestServer { server in
            let (a, b) = try Self.pair(server)
            let elsewhere = try server.connectReady(name: "Carol")
            try elsewhere.call("subscribe", ["channel": "timers/garage"])
            try b.call("subscribe", ["channel": Self.channel])
            Self.check(try a.readUntil(type: "presence"), joined: [b], left: [])
            #expect(try elsewhere.request("ping").isOK)
            #expect(!elsewhere.pushes.contains { $0.type == "presence" }, "got: \(describe(elsewhere.pushes))")
        }
    }

    @Test("three watchers: a departure is told to both who remain")
    func departureToAllRemaining() throws {
        try withTestServer { server in
            let (a, b) = try Self.pair(server)
            let c = try server.connectReady(name: "Carol")
            try b.call("subscribe", ["channel": Self.channel])
            try c.call("subscribe", ["channel": Self.channel])
            Self.check(try a.readUntil(type: "presence"), joined: [b], left: [])
            Self.check(try a.readUntil(type: "presence"), joined: [c], left: [])
            Self.check(try b.readUntil(type: "presence"), joined: [c], left: [])
            c.closeAbruptly()
            Self.check(try a.readUntil(type: "presence"), joined: [], left: [c])
            Self.check(try b.readUntil(type: "presence"), joined: [], left: [c])
        }
    }
}
