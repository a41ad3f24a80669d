import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing

/// Framing over real TCP: lengths at and past the limits, bodies that are
/// not JSON objects, and frames split or batched across writes.
@Suite("framing", .timeLimit(.minutes(3)))
struct FramingTests {
    /// A 4-byte big-endian length header.
    static func header(_ length: UInt32) -> [UInt8] {
        withUnsafeBytes(of: length.bigEndian) { Array($0) }
    }

    @Test("a body that is not a JSON object is bad_json and the connection is kept", arguments: [
        Array("{not json".utf8),
        Array("[1,2]".utf8),
        Array("42".utf8),
        Array("\"text\"".utf8),
        Array("null".utf8),
        [0xFF, 0xFE, 0xFD],
    ] as [[UInt8]])
    func badJSONKeepsConnection(body: [UInt8]) throws {
        try withTestServer { server in
            let client = try server.connectReady()
            try client.sendFrameBody(Data(body))
            let push = try client.readFrame()
            #expect(push.type == "error")
            #expect(push.errorCode == .badJSON, "got \(describe([push]))")
            let ping = try client.request("ping")
            #expect(ping.isOK)
            #expect(client.pushes.isEmpty, "unexpected frames: \(describe(client.pushes))")
        }
    }

    @Test("a header over max_frame is frame_too_large, bye protocol_error, close", arguments: [
        UInt32(65_537), UInt32(1 << 24), UInt32.max,
    ])
    func frameTooLarge(length: UInt32) throws {
        try withTestServer { server in
            let client = try server.connectReady()
            // Only the header and a few body bytes: the server must answer
            // without waiting for (or buffering) the announced body.
            try client.sendRaw(Self.header(length) + Array("{\"type\":".utf8))
            let error = try client.readFrame()
            #expect(error.type == "error")
            #expect(error.errorCode == .frameTooLarge, "got \(describe([error]))")
            let bye = try client.readFrame()
            #expect(bye.type == "bye")
            #expect(bye["reason"] as? String == "protocol_error")
            #expect(client.expectClosed(), "still open after bye; seen: \(describe(client.transcript))")
        }
    }

    @Test("a frame length of 0 or 1 is bad_frame, bye protocol_error, close", arguments: [UInt32(0), UInt32(1)])
    func badFrame(length: UInt32) throws {
        try withTestServer { server in
            let client = try server.connectReady()
            try client.sendRaw(Self.header(length) + (length == 1 ? [UInt8(ascii: "{")] : []))
            let error = try client.readFrame()
            #expect(error.type == "error")
            #expect(error.errorCode == .badFrame, "got \(describe([error]))")
            let bye = try client.readFrame()
            #expect(bye["reason"] as? String == "protocol_error")
            #expect(client.expectClosed())
        }
    }

    @Test("a frame of exactly max_frame bytes is accepted")
    func exactlyMaxFrame() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            var body = Array(#"{"type":"ping","id":7}"#.utf8)
            body += [UInt8](repeating: UInt8(ascii: " "), count: 65_536 - body.count)
            #expect(body.count == 65_536)
            try client.sendFrameBody(Data(body))
            let reply = try client.readReply(id: 7)
            #expect(reply.isOK)
        }
    }

    @Test("a configured max_frame is enforced at max and max + 1")
    func configuredMaxFrame() throws {
        try withTestServer({ $0.maxFrame = 1_024 }) { server in
            let client = try server.connectReady()
            var body = Array(#"{"type":"ping","id":"at-max"}"#.utf8)
            body += [UInt8](repeating: UInt8(ascii: " "), count: 1_024 - body.count)
            try client.sendFrameBody(Data(body))
            let reply = try client.readFrame()
            #expect(reply["id"] as? String == "at-max")
            #expect(reply.isOK)

            try client.sendRaw(Self.header(1_025))
            #expect(try client.readFrame().errorCode == .frameTooLarge)
            #expect(try client.readFrame()["reason"] as? String == "protocol_error")
            #expect(client.expectClosed())
        }
    }

    @Test("a frame sent one byte per write is decoded")
    func byteByByte() throws {
        try withTestServer { server in
            let client = try server.connect()
            let hello = TestClient.framed(try TestClient.body(["type": "hello", "id": 1, "protocol": 1]))
            let ping = TestClient.framed(try TestClient.body(["type": "ping", "id": 2]))
            for byte in hello + ping {
                try client.sendRaw([byte])
            }
            let helloReply = try client.readReply(id: 1)
            #expect(helloReply.isOK)
            #expect(try client.readReply(id: 2).isOK)
            #expect(client.pushes.isEmpty)
        }
    }

    @Test("a frame boundary inside the next header is handled")
    func splitInsideHeader() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let first = TestClient.framed(try TestClient.body(["type": "ping", "id": 10]))
            let second = TestClient.framed(try TestClient.body(["type": "ping", "id": 11]))
            try client.sendRaw(first + second.prefix(2))
            #expect(try client.readReply(id: 10).isOK)
            try client.sendRaw(Array(second.dropFirst(2)))
            #expect(try client.readReply(id: 11).isOK)
        }
    }

    @Test("50 frames in one write get 50 replies, in order")
    func fiftyFramesInOneWrite() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            var bytes: [UInt8] = []
            for id in 1...50 {
                bytes += TestClient.framed(try TestClient.body(["type": "ping", "id": id]))
            }
            try client.sendRaw(bytes)
            var ids: [Int] = []
            for _ in 1...50 {
                let frame = try client.readFrame()
                #expect(frame.type == "reply")
                #expect(frame.isOK)
                ids.append(frame[int: "id"] ?? -1)
            }
            #expect(ids == Array(1...50))
        }
    }
}
