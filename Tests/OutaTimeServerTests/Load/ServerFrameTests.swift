import Foundation
import OutaTimeProtocol
import Testing
@testable import outatime_load

/// The harness's frame classification: the fast path for successful replies
/// as the server writes them, and the full parse for everything else.
@Suite("outatime-load frame classification")
struct ServerFrameTests {
    private func classify(_ text: String) -> ServerFrame {
        Array(text.utf8).withUnsafeBytes { ServerFrame.classify($0) }
    }

    private func classify(_ message: some Encodable) throws -> ServerFrame {
        try MessageEncoder().body(message).withUnsafeBytes { ServerFrame.classify($0) }
    }

    @Test("a success reply the server encodes is a reply with its id and no error")
    func serverReply() throws {
        guard case .reply(let id, let error) = try classify(ReplyOK(id: .int(42), result: PublishResult(delivered: 1))) else {
            Issue.record("not a reply")
            return
        }
        #expect(id == 42 && error == nil)
    }

    @Test("a failure reply carries code and message, whatever the key order")
    func failureReply() throws {
        guard case .reply(let id, let error) = try classify(ReplyError(id: .int(7), error: ProtocolError(.conflict, "busy"))) else {
            Issue.record("not a reply")
            return
        }
        #expect(id == 7 && error == "conflict: busy")
        guard case .reply(let other, let reordered) = classify(#"{"ok":false,"id":8,"error":{"message":"m","code":"invalid_args"},"type":"reply"}"#) else {
            Issue.record("not a reply")
            return
        }
        #expect(other == 8 && reordered == "invalid_args: m")
    }

    @Test("replies in another key order or with a string id take the full parse")
    func otherShapes() {
        guard case .reply(let id, nil) = classify(#"{"id":3,"type":"reply","ok":true,"result":{}}"#) else {
            Issue.record("not a success reply")
            return
        }
        #expect(id == 3)
        guard case .reply(nil, nil) = classify(#"{"type":"reply","id":"x","ok":true,"result":{}}"#) else {
            Issue.record("a string id is not an integer id")
            return
        }
        // "ok":true must follow the id directly for the fast path; here it is false.
        guard case .reply(9, let error?) = classify(#"{"type":"reply","id":9,"ok":false,"error":{"code":"c","message":"m"}}"#) else {
            Issue.record("not a failure reply")
            return
        }
        #expect(error == "c: m")
    }

    @Test("bye and error pushes are failures; unreadable frames too")
    func failures() {
        guard case .failure = classify(#"{"type":"bye","reason":"server_shutdown"}"#),
              case .failure = classify(#"{"type":"error","error":{"code":"bad_json","message":"x"}}"#),
              case .failure = classify("not json") else {
            Issue.record("expected failures")
            return
        }
    }
}
