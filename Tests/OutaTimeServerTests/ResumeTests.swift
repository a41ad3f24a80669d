import OutaTimeTestSupport
import Foundation
import Testing

/// `hello` `resume` (§6.1): a reconnecting client's old connection is
/// closed (`bye` `replaced`, presence `left`) before its new `hello` is
/// answered, so no watcher list shows it twice.
@Suite("resume", .timeLimit(.minutes(3)))
struct ResumeTests {
    static let channel = "timers/resume"

    @Test("hello with the old connection's resume_key: bye replaced, left before joined, no ghost in the list")
    func replaces() throws {
        try withTestServer { server in
            let a = try server.connectReady(name: "Alice")
            try a.call("subscribe", ["channel": Self.channel])
            let old = try server.connect()
            let key = try #require(try old.hello(name: "Bob")["resume_key"] as? String)
            #expect(key.count >= 22 && key.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
            try old.call("subscribe", ["channel": Self.channel])
            #expect(try a.readUntil(type: "presence").sessions("joined") == [old.session ?? "?"])

            let new = try server.connect()
            let result = try new.call("hello", ["protocol": 1, "name": "Bob", "resume": key])
            #expect(result["resume_key"] as? String != key, "every connection gets its own key")
            let watchers = try new.call("subscribe", ["channel": Self.channel]).sessions("watchers")
            #expect(Set(watchers) == Set([a.session, result["session"] as? String].compactMap { $0 }))

            let left = try a.readUntil(type: "presence")
            #expect(left.sessions("left") == [old.session ?? "?"])
            #expect(left.sessions("joined").isEmpty)
            let joined = try a.readUntil(type: "presence")
            #expect(joined.sessions("joined") == [result["session"] as? String ?? "?"])

            let bye = try old.readUntil(type: "bye")
            #expect(bye["reason"] as? String == "replaced")
            #expect(old.expectClosed())
        }
    }

    @Test("an unknown, malformed or used-up key changes nothing; a non-string or over-long one is invalid_request")
    func wrongKeys() throws {
        try withTestServer { server in
            let a = try server.connectReady(name: "Alice")
            try a.call("subscribe", ["channel": Self.channel])
            let bob = try server.connect()
            let key = try #require(try bob.hello(name: "Bob")["resume_key"] as? String)
            try bob.call("subscribe", ["channel": Self.channel])
            _ = try a.readUntil(type: "presence")

            let flipped = String(key.dropLast()) + (key.last == "A" ? "B" : "A")
            for wrong in ["not a key", String(repeating: "A", count: 32), flipped, ""] {
                let other = try server.connect()
                #expect(try other.call("hello", ["protocol": 1, "resume": wrong])["session"] != nil, "\(wrong)")
            }
            for bad: Any in [5, String(repeating: "k", count: 65), ["k"]] {
                let other = try server.connect()
                let reply = try other.request("hello", ["protocol": 1, "resume": bad])
                #expect(reply["ok"] as? Bool == false)
                #expect(reply[object: "error"]?["code"] as? String == "invalid_request")
                #expect((reply[object: "error"]?["message"] as? String)?.contains("resume") == true)
            }
            // Bob is still there, still listed, and nobody left.
            #expect(try bob.request("ping")["ok"] as? Bool == true)
            #expect(try a.call("subscribe", ["channel": Self.channel]).sessions("watchers").contains(bob.session ?? "?"))
            #expect(!a.pushes.contains { $0.type == "presence" }, "A got: \(describe(a.pushes))")
        }
    }
}
