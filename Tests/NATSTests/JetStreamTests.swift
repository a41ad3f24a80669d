import NATS
import NATSTestSupport
import Testing

@Suite("NATS JetStream")
struct JetStreamTests {
    /// A server, a context and the test stream `OT_T` on `ot.t.>`.
    struct Fixture {
        let server: NATSServerProcess
        let connection: NATSConnection
        let jetStream: JetStream

        init() throws {
            server = try NATSServerProcess.start()
            connection = try NATSConnection(NATSConnectionOptions(servers: [server.url]))
            jetStream = try JetStream(connection, timeout: .seconds(2))
            var config = StreamConfig(name: "OT_T", subjects: ["ot.t.>"])
            config.maxMessagesPerSubject = 100
            config.denyDelete = true
            config.denyPurge = true
            config.duplicateWindow = .seconds(60)
            config.maxMessageSize = 1 << 20
            try jetStream.ensureStream(config)
            try jetStream.ensureStream(config)  // again: an update to the same settings
        }

        func stop() {
            connection.close()
            server.stop()
        }
    }

    @Test("publish CAS: the next seq is accepted, a stale one is refused with 10071")
    func compareAndSet() throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let js = fixture.jetStream
        let first = try js.publish("ot.t.a", data: Array("1".utf8), options: PublishOptions(expectedLastSubjectSequence: .empty))
        #expect(first.stream == "OT_T")
        #expect(first.sequence == 1)
        #expect(!first.duplicate)
        _ = try js.publish("ot.t.other", data: [0])  // moves the stream, not the subject
        let second = try js.publish("ot.t.a", data: Array("2".utf8), options: PublishOptions(expectedLastSubjectSequence: .sequence(1)))
        #expect(second.sequence == 3)
        let stale = #expect(throws: NATSError.self) {
            try js.publish("ot.t.a", data: Array("x".utf8), options: PublishOptions(expectedLastSubjectSequence: .sequence(1)))
        }
        guard case .wrongLastSequence = stale else { Issue.record("expected wrongLastSequence, got \(String(describing: stale))"); return }
        #expect("\(stale!)".contains("ot.t.a"))
        let notEmpty = #expect(throws: NATSError.self) {
            try js.publish("ot.t.a", data: [], options: PublishOptions(expectedLastSubjectSequence: .empty))
        }
        guard case .wrongLastSequence = notEmpty else { Issue.record("expected wrongLastSequence, got \(String(describing: notEmpty))"); return }
        #expect(try js.lastMessage(stream: "OT_T", subject: "ot.t.a")?.text == "2")
    }

    @Test("a repeated Msg-Id is acknowledged as a duplicate and stored once; with a CAS the CAS refuses first")
    func duplicateMessageID() throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let js = fixture.jetStream
        let options = PublishOptions(msgID: "ot/x:1")
        let first = try js.publish("ot.t.x", data: Array("once".utf8), headers: ["OT-Seq-First": "1"], options: options)
        let again = try js.publish("ot.t.x", data: Array("once".utf8), headers: ["OT-Seq-First": "1"], options: options)
        #expect(!first.duplicate)
        #expect(again.duplicate)
        #expect(again.sequence == first.sequence)
        let stored = try #require(try js.message(stream: "OT_T", sequence: first.sequence))
        #expect(stored.text == "once")
        #expect(stored.headers["OT-Seq-First"] == "1")
        #expect(stored.headers["Nats-Msg-Id"] == "ot/x:1")
        #expect(stored.streamSequence == first.sequence)
        #expect(try js.message(stream: "OT_T", sequence: 2) == nil)
        // nats-server 2.15.1 checks the CAS before the duplicate window: a
        // retry of a stored CAS publish is refused (10071), and the writer
        // reads the last message to see that it was its own (design §4.5).
        let casOptions = PublishOptions(msgID: "ot/y:1", expectedLastSubjectSequence: .empty)
        let y = try js.publish("ot.t.y", data: Array("y".utf8), options: casOptions)
        let retry = #expect(throws: NATSError.self) { try js.publish("ot.t.y", data: Array("y".utf8), options: casOptions) }
        guard case .wrongLastSequence = retry else { Issue.record("expected wrongLastSequence, got \(String(describing: retry))"); return }
        let last = try #require(try js.lastMessage(stream: "OT_T", subject: "ot.t.y"))
        #expect(last.headers["Nats-Msg-Id"] == "ot/y:1")
        #expect(last.streamSequence == y.sequence)
    }

    @Test("last message and direct get of the next message by subject; nil when none")
    func reads() throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let js = fixture.jetStream
        #expect(try js.lastMessage(stream: "OT_T", subject: "ot.t.c") == nil)
        var seqs: [UInt64] = []
        for index in 1...5 {
            seqs.append(try js.publish("ot.t.c", data: Array("c\(index)".utf8), headers: ["OT-Seq-First": "\(index)"]).sequence)
            _ = try js.publish("ot.t.d", data: Array("d\(index)".utf8))
        }
        let last = try #require(try js.lastMessage(stream: "OT_T", subject: "ot.t.c"))
        #expect(last.text == "c5")
        #expect(last.streamSequence == seqs[4])
        #expect(last.subject == "ot.t.c")
        var walked: [String] = []
        var next: UInt64 = 1
        while let message = try js.nextMessage(stream: "OT_T", subject: "ot.t.c", atOrAfter: next) {
            walked.append(message.text)
            #expect(message.headers["OT-Seq-First"] == "\(walked.count)")
            next = message.streamSequence + 1
        }
        #expect(walked == ["c1", "c2", "c3", "c4", "c5"])
        #expect(try js.nextMessage(stream: "OT_T", subject: "ot.t.none", atOrAfter: 1) == nil)
        #expect(throws: NATSError.self) { try js.lastMessage(stream: "OT_MISSING", subject: "ot.t.c") }
        #expect(throws: NATSError.self) { try js.ensureStream(StreamConfig(name: "BAD.NAME", subjects: ["x"])) }
    }
}
