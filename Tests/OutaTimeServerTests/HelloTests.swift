import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing

/// `hello`: its result, and what happens before, instead of and after it.
@Suite("hello", .timeLimit(.minutes(3)))
struct HelloTests {
    @Test("the hello result carries server, protocol, session, heartbeat, max_frame and role")
    func helloResult() throws {
        try withTestServer { server in
            let client = try server.connect()
            let result = try client.hello(name: "Doc")
            #expect(result["server"] as? String == "outatime/0.1.0")
            #expect(result[int: "protocol"] == 1)
            let session = try #require(result["session"] as? String)
            #expect(!session.isEmpty)
            #expect(result[int: "heartbeat_ms"] == 15_000)
            #expect(result[int: "max_frame"] == 65_536)
            #expect(result["role"] as? String == "operate")
        }
    }

    @Test("hello advertises the configured heartbeat and max_frame")
    func helloAdvertisesConfig() throws {
        try withTestServer({ $0.heartbeatMs = 3_000; $0.maxFrame = 4_096 }) { server in
            let result = try server.connect().hello()
            #expect(result[int: "heartbeat_ms"] == 3_000)
            #expect(result[int: "max_frame"] == 4_096)
        }
    }

    @Test("every connection gets its own session id")
    func sessionsAreDistinct() throws {
        try withTestServer { server in
            let sessions = try (0..<3).map { _ in try server.connectReady().session }
            #expect(Set(sessions.compactMap { $0 }).count == 3)
        }
    }

    @Test("a request before hello is hello_required and the connection stays usable")
    func helloRequired() throws {
        try withTestServer { server in
            let client = try server.connect()
            let early = try client.request("ping")
            #expect(early["ok"] as? Bool == false)
            #expect(early.errorCode == .helloRequired)
            #expect(early.errorMessage?.isEmpty == false)

            try client.sendFrame(["type": "subscribe", "channel": "delorean/early"])
            let push = try client.readUntil(type: "error")
            #expect(push.errorCode == .helloRequired)

            try client.hello()
            let ping = try client.call("ping")
            #expect(ping["time"] is String)
        }
    }

    @Test("protocol 2 is unsupported_protocol, then bye, then close")
    func unsupportedProtocol() throws {
        try withTestServer { server in
            let client = try server.connect()
            let reply = try client.request("hello", ["protocol": 2])
            #expect(reply["ok"] as? Bool == false)
            #expect(reply.errorCode == .unsupportedProtocol)
            let bye = try client.readUntil(type: "bye")
            #expect(bye["reason"] as? String == "unsupported_protocol")
            #expect(client.expectClosed(), "still open after bye; seen: \(describe(client.transcript))")
        }
    }

    @Test("hello without an id and a wrong protocol is an error push, then bye")
    func unsupportedProtocolWithoutID() throws {
        try withTestServer { server in
            let client = try server.connect()
            try client.sendFrame(["type": "hello", "protocol": 2])
            let error = try client.readFrame()
            #expect(error.type == "error")
            #expect(error.errorCode == .unsupportedProtocol)
            let bye = try client.readFrame()
            #expect(bye.type == "bye")
            #expect(bye["reason"] as? String == "unsupported_protocol")
            #expect(client.expectClosed())
        }
    }

    @Test("hello without protocol is invalid_request and hello can be retried")
    func helloMissingProtocol() throws {
        try withTestServer { server in
            let client = try server.connect()
            let reply = try client.request("hello", ["name": "Marty"])
            #expect(reply.errorCode == .invalidRequest)
            let wrongType = try client.request("hello", ["protocol": "1"])
            #expect(wrongType.errorCode == .invalidRequest)
            #expect(try client.hello()["role"] as? String == "operate")
        }
    }

    @Test("a second hello is invalid_request and the session keeps working")
    func secondHello() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let again = try client.request("hello", ["protocol": 1])
            #expect(again.errorCode == .invalidRequest)
            #expect(try client.request("ping").isOK)
        }
    }

    @Test("bad_json before hello keeps the connection")
    func badJSONBeforeHello() throws {
        try withTestServer { server in
            let client = try server.connect()
            try client.sendFrameBody(Data("{nope".utf8))
            #expect(try client.readFrame().errorCode == .badJSON)
            #expect(try client.hello()["protocol"] != nil)
        }
    }

    @Test("the watcher name is hello name, else client, else anonymous")
    func watcherNames() throws {
        try withTestServer { server in
            let named = try server.connect()
            try named.hello(name: "Marty", client: "tui")
            let byClient = try server.connect()
            try byClient.hello(name: nil, client: "tui")
            let anonymous = try server.connect()
            try anonymous.hello(name: nil, client: nil)
            try named.call("subscribe", ["channel": "laps/names"])
            try byClient.call("subscribe", ["channel": "laps/names"])
            let result = try anonymous.call("subscribe", ["channel": "laps/names"])
            let names = Dictionary(uniqueKeysWithValues: (result[objects: "watchers"] ?? []).compactMap { watcher in
                (watcher["session"] as? String).map { ($0, watcher["name"] as? String ?? "?") }
            })
            #expect(names[named.session ?? ""] == "Marty")
            #expect(names[byClient.session ?? ""] == "tui")
            #expect(names[anonymous.session ?? ""] == "anonymous")
        }
    }
}
