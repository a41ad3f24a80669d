import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing

/// The request envelope: `type` and `id` handling, replies vs error pushes.
@Suite("envelope", .timeLimit(.minutes(3)))
struct EnvelopeTests {
    @Test("an unknown type is unknown_type: a reply with an id, an error push without")
    func unknownType() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let reply = try client.request("warp", ["speed": 88])
            #expect(reply["ok"] as? Bool == false)
            #expect(reply.errorCode == .unknownType)
            #expect(reply.errorMessage?.contains("warp") == true, "message should name the type: \(describe([reply]))")

            try client.sendFrame(["type": "warp"])
            let push = try client.readFrame()
            #expect(push.type == "error")
            #expect(push.errorCode == .unknownType)
            #expect(try client.request("ping").isOK)
        }
    }

    @Test("a missing or non-string type is invalid_request")
    func missingType() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            try client.sendFrame(["id": 41])
            let reply = try client.readReply(id: 41)
            #expect(reply.errorCode == .invalidRequest)

            try client.sendFrame(["id": 42, "type": 5])
            #expect(try client.readReply(id: 42).errorCode == .invalidRequest)

            try client.sendFrame(["channel": "delorean/x"])
            let push = try client.readFrame()
            #expect(push.type == "error")
            #expect(push.errorCode == .invalidRequest)
        }
    }

    @Test("an invalid id is an invalid_request error push and the connection is kept", arguments: [
        "-1", "1.5", "9007199254740994", "true", "{}", "[1]", "\"\(String(repeating: "x", count: 65))\"",
    ])
    func invalidID(id: String) throws {
        try withTestServer { server in
            let client = try server.connectReady()
            try client.sendFrameBody(Data(#"{"type":"ping","id":\#(id)}"#.utf8))
            let push = try client.readFrame()
            #expect(push.type == "error", "id \(id) got \(describe([push]))")
            #expect(push.errorCode == .invalidRequest)
            #expect(try client.request("ping").isOK)
        }
    }

    @Test("valid ids are echoed unchanged", arguments: [
        "0", "9007199254740992", "\"abc\"", "\"\"", "\"\(String(repeating: "y", count: 64))\"",
    ])
    func idEchoed(id: String) throws {
        try withTestServer { server in
            let client = try server.connectReady()
            try client.sendFrameBody(Data(#"{"type":"ping","id":\#(id)}"#.utf8))
            let reply = try client.readFrame()
            #expect(reply.type == "reply")
            #expect(reply.isOK)
            let expected = try JSONSerialization.jsonObject(with: Data(id.utf8), options: .fragmentsAllowed)
            #expect(jsonEqual(reply["id"], expected), "sent id \(id), got \(describe([reply]))")
        }
    }

    @Test("a request without an id that succeeds gets no reply")
    func noIDNoReply() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            try client.sendFrame(["type": "ping"])
            let reply = try client.request("ping")
            #expect(reply.isOK)
            #expect(client.pushes.isEmpty, "a request without id was answered: \(describe(client.pushes))")
        }
    }

    @Test("ping returns the server time in ISO 8601 UTC")
    func pingTime() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let time = try #require(try client.call("ping")["time"] as? String)
            let parsed = try #require(ISO8601DateFormatter().date(from: time), "not ISO 8601: \(time)")
            #expect(time.hasSuffix("Z"))
            #expect(abs(parsed.timeIntervalSinceNow) < 60)
        }
    }

    @Test("unknown fields are ignored")
    func unknownFieldsIgnored() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let reply = try client.request("ping", ["flux": ["capacitor": true], "x-extra": 1])
            #expect(reply.isOK)
        }
    }

    @Test("command answers unknown_action naming the action (until the next issue)")
    func commandUnknownAction() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let reply = try client.request("command", ["channel": "delorean/doc", "action": "flux", "args": [:] as [String: Any]])
            #expect(reply.errorCode == .unknownAction)
            #expect(reply.errorMessage?.contains("flux") == true, "got \(describe([reply]))")
            let badChannel = try client.request("command", ["channel": "delorean/", "action": "flux"])
            #expect(badChannel.errorCode == .invalidChannel)
        }
    }
}
