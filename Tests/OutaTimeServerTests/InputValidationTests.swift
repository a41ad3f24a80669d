import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing

/// Issue 13's adversarial corpus over the wire: strict times, lengths in
/// characters and bytes, ids that are exact integers, and `hello` with an
/// integer protocol other than 1. Each answer carries its stable code, and
/// the connection (or, after a `bye`, the other clients) goes on.
@Suite("input validation", .timeLimit(.minutes(3)))
struct InputValidationTests {
    @Test("impossible times are invalid_time on every kind; nothing is stored and the connection goes on")
    func strictTimes() throws {
        try withTestServer { server in
            let doc = try server.connectReady(name: "Doc")
            let marty = try server.connectReady(name: "Marty")
            _ = try marty.call("subscribe", ["channel": "delorean/strict"])
            for text in ["1985-02-29T00:00:00Z", "1985-10-26T25:00:00Z", "1985-10-26T01:61:00Z", "1985-10-26T01:21:00Zjunk"] {
                let reply = try doc.command("delorean/strict", "set_destination", ["time": text])
                #expect(reply.errorCode == .invalidTime, "\(text): \(describe([reply]))")
                let message = reply.errorMessage ?? ""
                #expect(message.contains("'time'") && message.contains("'\(text)'") && message.contains("yyyy-MM-dd"), "\(message)")
                let timer = try doc.command("timers/strict", "add", ["event": "dance", "at": text])
                #expect(timer.errorCode == .invalidTime, "\(text): \(describe([timer]))")
                let dispatch = try doc.command("starport/strict", "dispatch", ["model": "SWingV2", "path": "AB", "departs_at": text])
                #expect(dispatch.errorCode == .invalidTime, "\(text): \(describe([dispatch]))")
            }
            #expect(try doc.state("delorean/strict")["destination_time"] is NSNull, "a refused time set nothing")
            // Eight fraction digits are truncated, not rounded up to the next second.
            _ = try doc.perform("delorean/strict", "set_destination", ["time": "1955-11-12T22:03:59.99999999Z"])
            let event = try marty.readUntil(type: "event")
            #expect(event[object: "data"]?["destination_time"] as? String == "1955-11-12T22:03:59Z")
            #expect(try doc.request("ping").isOK)
        }
    }

    @Test("one character of thousands of combining marks is refused in a timer event and a hello name")
    func lengthsInBytes() throws {
        try withTestServer { server in
            let zalgo = "a" + String(repeating: "\u{301}", count: 3_000)  // 1 character, 6,001 bytes
            let newcomer = try server.connect()
            let hello = try newcomer.request("hello", ["protocol": 1, "name": zalgo])
            #expect(hello.errorCode == .invalidRequest)
            #expect(hello.errorMessage?.contains("1 character and 6001 bytes") == true, "\(describe([hello]))")
            #expect(hello.errorMessage?.contains("at most 400 bytes") == true)
            try newcomer.hello(name: String(repeating: "🚗", count: 100))  // 400 bytes: allowed, and the connection was kept

            let doc = try server.connectReady(name: "Doc")
            let reply = try doc.command("timers/zalgo", "add", ["event": zalgo, "remaining_s": 60])
            #expect(reply.errorCode == .invalidArgs)
            #expect(reply.errorMessage?.contains("argument 'event'") == true, "\(describe([reply]))")
            #expect(reply.errorMessage?.contains("1 character and 6001 bytes") == true)
            _ = try doc.perform("timers/zalgo", "add", ["event": "Enchantment Under the Sea", "remaining_s": 60])
            let list = try newcomer.state("timers/zalgo")
            #expect((list["timers"] as? [Any])?.count == 1)
        }
    }

    @Test("an id whose number is not an exact integer is an invalid_request push naming it; the connection goes on",
          arguments: ["1e-400", "9007199254740992.5", "0.5"])
    func inexactIDs(id: String) throws {
        try withTestServer { server in
            let client = try server.connectReady()
            try client.sendFrameBody(Data(#"{"type":"ping","id":\#(id)}"#.utf8))
            let push = try client.readFrame()
            #expect(push.type == "error", "id \(id) got \(describe([push]))")
            #expect(push.errorCode == .invalidRequest)
            #expect(push.errorMessage?.hasSuffix("got \(id)") == true, "\(describe([push]))")
            // The same numbers written as exact integers are echoed as they are.
            try client.sendFrameBody(Data(#"{"type":"ping","id":9007199254740992.0}"#.utf8))
            let reply = try client.readFrame()
            #expect(reply.type == "reply" && reply["id"] as? Int == 9_007_199_254_740_992, "\(describe([reply]))")
            #expect(try client.request("ping").isOK)
        }
    }

    @Test("hello with an integer protocol other than 1 is unsupported_protocol, bye, close; others go on",
          arguments: ["-1", "4294967297", "0", "2", "99999999999999999999"])
    func unsupportedIntegers(version: String) throws {
        try withTestServer { server in
            let bystander = try server.connectReady(name: "Biff")
            let client = try server.connect()
            try client.sendFrameBody(Data(#"{"type":"hello","id":1,"protocol":\#(version)}"#.utf8))
            let reply = try client.readFrame()
            #expect(reply.type == "reply" && reply.errorCode == .unsupportedProtocol, "protocol \(version): \(describe([reply]))")
            #expect(reply.errorMessage?.contains("speaks protocol 1") == true)
            let bye = try client.readFrame()
            #expect(bye.type == "bye" && bye["reason"] as? String == "unsupported_protocol")
            #expect(client.expectClosed())
            #expect(try bystander.request("ping").isOK)
        }
    }

    @Test("hello with a protocol that is not an integer stays invalid_request and hello can follow",
          arguments: ["1.5", "1e-400", "\"1\"", "true"])
    func nonIntegerProtocol(version: String) throws {
        try withTestServer { server in
            let client = try server.connect()
            try client.sendFrameBody(Data(#"{"type":"hello","id":1,"protocol":\#(version)}"#.utf8))
            let reply = try client.readFrame()
            #expect(reply.errorCode == .invalidRequest, "protocol \(version): \(describe([reply]))")
            #expect(try client.hello()["protocol"] as? Int == 1)
        }
    }
}
