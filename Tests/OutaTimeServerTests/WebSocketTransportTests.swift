import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// The protocol over WebSocket (`GET /ws` on `--http`, PROTOCOL.md
/// "WebSocket transport"), end to end against the real server: one text
/// message is one frame body both ways, beside TCP clients on the same
/// channels; fragments, control frames, framing failures and their close
/// codes; every `bye` followed by a Close carrying its reason.
@Suite("WebSocket transport", .timeLimit(.minutes(3)))
struct WebSocketTransportTests {
    static func configure(_ config: inout ServerConfig) {
        config.http = HTTPEndpoint(port: 0)
    }

    @Test("hello, subscribe, command and event over /ws; the 101 declines permessage-deflate")
    func conversation() throws {
        try withTestServer(Self.configure) { server in
            let (answer, socket) = try WebSocketTestClient.handshake(port: server.httpPort)
            #expect(answer.status == 101)
            #expect(answer.fields["upgrade"]?.lowercased() == "websocket")
            #expect(answer.fields["sec-websocket-extensions"] == nil, "permessage-deflate is declined: \(answer.fields)")
            let web = WebSocketTestClient(socket: socket)
            let hello = try web.hello(name: "Wall screen")
            #expect(hello[int: "max_frame"] == ServerConfig().maxFrame, "\(hello)")
            let subscribed = try web.call("subscribe", ["channel": "laps/ws"])
            #expect(subscribed["seq"] != nil, "\(subscribed)")
            try web.call("command", ["channel": "laps/ws", "action": "start"])
            let event = try web.readUntil(type: "event")
            #expect(event["channel"] as? String == "laps/ws", "\(event)")
            let stats = try web.call("stats")
            #expect(stats[object: "http"]?[int: "websocket_upgrades"] == 1, "\(stats)")
            #expect(stats[object: "http"]?[int: "websocket_open"] == 1, "\(stats)")
            #expect(stats[object: "http"]?[int: "open"] == 0, "the upgraded connection left the HTTP side: \(stats)")
        }
    }

    @Test("a TCP client's command reaches a /ws subscriber, and a /ws client's command a TCP subscriber")
    func acrossTransports() throws {
        try withTestServer(Self.configure) { server in
            let web = try WebSocketTestClient(port: server.httpPort)
            try web.hello()
            let tcp = try server.connectReady(name: "terminal")
            try web.call("subscribe", ["channel": "laps/mixed"])
            try tcp.call("subscribe", ["channel": "laps/mixed"])

            try tcp.call("command", ["channel": "laps/mixed", "action": "start"])
            let seenByWeb = try web.readUntil(type: "event")
            #expect(seenByWeb[int: "seq"] == 1 && seenByWeb["event"] as? String == "started", "\(seenByWeb)")

            try web.call("command", ["channel": "laps/mixed", "action": "stop"])
            var seenByTCP = try tcp.readUntil(type: "event")
            if seenByTCP[int: "seq"] == 1 { seenByTCP = try tcp.readUntil(type: "event") }
            #expect(seenByTCP[int: "seq"] == 2 && seenByTCP["event"] as? String == "stopped", "\(seenByTCP)")
        }
    }

    @Test("fragments are joined into one message; a Ping between them is answered with its payload; Pong is ignored")
    func fragmentsAndControlFrames() throws {
        try withTestServer(Self.configure) { server in
            let web = try WebSocketTestClient(port: server.httpPort)
            try web.hello()
            let text = Array(#"{"type":"ping","id":77}"#.utf8)
            var bytes = WebSocketTestClient.frame(.text, Array(text[0..<5]), fin: false)
            bytes += WebSocketTestClient.frame(.ping, Array("are you there".utf8))
            bytes += WebSocketTestClient.frame(.continuation, Array(text[5..<12]), fin: false)
            bytes += WebSocketTestClient.frame(.pong, [1, 2, 3])
            bytes += WebSocketTestClient.frame(.continuation, Array(text[12...]))
            try web.socket.sendRaw(bytes)
            let reply = try web.readUntil(type: "reply")
            #expect(reply[int: "id"] == 77 && reply["ok"] as? Bool == true, "\(reply)")
            #expect(web.controls.contains(.pong(Array("are you there".utf8))), "\(web.controls)")
        }
    }

    @Test("a frame over max_frame: error frame_too_large, bye protocol_error, Close 1009", arguments: [false, true])
    func tooLarge(fragmented: Bool) throws {
        try withTestServer({ Self.configure(&$0); $0.maxFrame = 1_024 }) { server in
            let web = try WebSocketTestClient(port: server.httpPort)
            try web.hello()
            let body = Array(("{\"type\":\"ping\",\"pad\":\"" + String(repeating: "x", count: 1_100) + "\"}").utf8)
            if fragmented {
                // Each fragment fits; together they do not.
                try web.socket.sendRaw(WebSocketTestClient.frame(.text, Array(body[..<600]), fin: false)
                    + WebSocketTestClient.frame(.continuation, Array(body[600...])))
            } else {
                try web.socket.sendRaw(WebSocketTestClient.frame(.text, body))
            }
            let error = try web.readUntil(type: "error")
            #expect(error[object: "error"]?["code"] as? String == "frame_too_large", "\(error)")
            let bye = try web.readUntil(type: "bye")
            #expect(bye["reason"] as? String == "protocol_error")
            let close = try web.readClose()
            #expect(close.code == 1009 && close.reason == "protocol_error", "\(close)")
            #expect(web.socket.expectClosed())
        }
    }

    /// Raw frames the server refuses, and the close code each gets.
    static let refusedFrames: [(String, [UInt8], UInt16)] = [
        ("invalid UTF-8", WebSocketTestClient.frame(.text, [0x7B, 0xC3, 0x28, 0x7D]), 1007),
        ("a binary message", WebSocketTestClient.frame(.binary, Array(#"{"type":"ping"}"#.utf8)), 1003),
        ("an unmasked client frame", WebSocketTestClient.frame(.text, Array(#"{"type":"ping"}"#.utf8), masked: false), 1002),
        ("reserved bits", { var frame = WebSocketTestClient.frame(.text, Array("{}".utf8)); frame[0] |= 0x40; return frame }(), 1002),
    ]

    @Test("a refused frame: error bad_frame, bye protocol_error, then Close with its code", arguments: 0..<4)
    func refused(index: Int) throws {
        let (what, bytes, code) = Self.refusedFrames[index]
        try withTestServer(Self.configure) { server in
            let web = try WebSocketTestClient(port: server.httpPort)
            try web.hello()
            try web.socket.sendRaw(bytes)
            let error = try web.readUntil(type: "error")
            #expect(error[object: "error"]?["code"] as? String == "bad_frame", "\(what): \(error)")
            let bye = try web.readUntil(type: "bye")
            #expect(bye["reason"] as? String == "protocol_error", "\(what)")
            let close = try web.readClose()
            #expect(close.code == code && close.reason == "protocol_error", "\(what): \(close)")
            #expect(web.socket.expectClosed(), "\(what)")
        }
    }

    @Test("every bye is followed by a Close whose reason is the bye reason and whose code fits it")
    func byeThenClose() throws {
        try withTestServer({ Self.configure(&$0); $0.helloTimeoutMs = 300 }) { server in
            // unsupported_protocol: a policy refusal, 1008.
            let wrongVersion = try WebSocketTestClient(port: server.httpPort)
            try wrongVersion.sendMessage(["type": "hello", "id": 1, "protocol": 2])
            let refusal = try wrongVersion.readUntil(type: "bye")
            #expect(refusal["reason"] as? String == "unsupported_protocol")
            let refusalClose = try wrongVersion.readClose()
            #expect(refusalClose.code == 1008 && refusalClose.reason == "unsupported_protocol", "\(refusalClose)")

            // hello_timeout: a normal end, 1000.
            let silent = try WebSocketTestClient(port: server.httpPort)
            let timeout = try silent.readClose(timeout: 10)
            #expect(silent.pushes.last?["reason"] as? String == "hello_timeout", "\(silent.pushes)")
            #expect(timeout.code == 1000 && timeout.reason == "hello_timeout", "\(timeout)")

            // server_shutdown: going away, 1001.
            let ready = try WebSocketTestClient(port: server.httpPort)
            try ready.hello()
            server.requestShutdown()
            let shutdown = try ready.readClose(timeout: 10)
            #expect(ready.pushes.last?["reason"] as? String == "server_shutdown", "\(ready.pushes)")
            #expect(shutdown.code == 1001 && shutdown.reason == "server_shutdown", "\(shutdown)")
        }
    }

    @Test("the peer's Close is answered with a Close (its code echoed) and ends the session like EOF")
    func peerClose() throws {
        try withTestServer(Self.configure) { server in
            let web = try WebSocketTestClient(port: server.httpPort)
            try web.hello()
            // A request, then the Close right behind it: the reply comes first.
            try web.socket.sendRaw(WebSocketTestClient.frame(.text, Array(#"{"type":"ping","id":5}"#.utf8))
                + WebSocketTestClient.frame(.close, [0x03, 0xE8] + Array("done".utf8)))
            let reply = try web.readUntil(type: "reply")
            #expect(reply[int: "id"] == 5)
            let close = try web.readClose()
            #expect(close.code == 1000 && close.reason.isEmpty, "\(close)")
            #expect(web.socket.expectClosed())
            let observer = try server.connectReady()
            let stats = try observer.call("stats")
            #expect(stats[object: "closes"]?[int: "peer_closed"] == 1, "\(stats)")
        }
    }

    @Test("WebSocket Pings and Pongs alone count as activity; a silent client gets bye idle_timeout and Close 1000")
    func controlFramesAreActivity() throws {
        try withTestServer({ Self.configure(&$0); $0.heartbeatMs = 500 }) { server in
            let pinging = try WebSocketTestClient(port: server.httpPort)
            try pinging.hello()
            let silent = try WebSocketTestClient(port: server.httpPort)
            try silent.hello()
            // 2 s of control frames only (the idle timeout is 1 s): a Ping, then a Pong, every 100 ms.
            let start = Date()
            var sent = 0
            while Date().timeIntervalSince(start) < 2.0 && sent < 100 {
                try pinging.socket.sendRaw(WebSocketTestClient.frame(sent % 2 == 0 ? .ping : .pong, [UInt8(sent & 0xFF)]))
                sent += 1
                usleep(100_000)
            }
            #expect(sent >= 10)
            #expect(try pinging.request("ping").isOK, "kept by control frames alone")
            #expect(!pinging.pushes.contains { $0.type == "bye" }, "\(pinging.pushes)")
            let close = try silent.readClose(timeout: 10)
            #expect(silent.pushes.last?["reason"] as? String == "idle_timeout", "\(silent.pushes)")
            #expect(close.code == 1000 && close.reason == "idle_timeout", "\(close)")
        }
    }
}
