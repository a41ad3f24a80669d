import NATS
import NATSTestSupport
import Testing

@Suite("NATS core messaging")
struct CoreMessagingTests {
    @Test("a subscriber gets each message with its headers, in order")
    func publishSubscribe() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let connection = try NATSConnection(NATSConnectionOptions(servers: [server.url]))
        defer { connection.close() }
        let received = Collector<NATSMessage>()
        let subscription = try connection.subscribe("ot.test.>") { received.add($0) }
        try connection.flush()
        for index in 0..<20 {
            try connection.publish("ot.test.\(index)", data: Array("m\(index)".utf8), headers: ["OT-Index": "\(index)"])
        }
        let messages = received.wait(for: 20)
        #expect(messages.map(\.text) == (0..<20).map { "m\($0)" })
        #expect(messages.map { $0.headers["OT-Index"] } == (0..<20).map { "\($0)" })
        #expect(messages.first?.subject == "ot.test.0")
        try subscription.drain()
        try connection.publish("ot.test.late", data: [1])
        try connection.flush()
        #expect(received.count == 20)
    }

    @Test("request/reply answers within the timeout; no responders and timeouts are typed")
    func requestReply() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let responder = try NATSConnection(NATSConnectionOptions(servers: [server.url], name: "responder"))
        defer { responder.close() }
        let requester = try NATSConnection(NATSConnectionOptions(servers: [server.url], name: "requester"))
        defer { requester.close() }
        let subscription = try responder.subscribe("ot.echo") { message in
            try? responder.respond(to: message, data: Array("echo \(message.text)".utf8), headers: ["OT-Echo": "1"])
        }
        try responder.flush()
        let reply = try requester.request("ot.echo", data: Array("hi".utf8), timeout: .seconds(2))
        #expect(reply.text == "echo hi")
        #expect(reply.headers["OT-Echo"] == "1")
        #expect(throws: NATSError.noResponders(subject: "ot.nobody")) {
            try requester.request("ot.nobody", data: [], timeout: .seconds(2))
        }
        let silent = try responder.subscribe("ot.silent") { _ in }
        try responder.flush()
        #expect(throws: NATSError.timeout(operation: "request to 'ot.silent'")) {
            try requester.request("ot.silent", data: [], timeout: .milliseconds(100))
        }
        try silent.unsubscribe()
        try subscription.unsubscribe()
        #expect(throws: NATSError.self) {
            try requester.respond(to: NATSMessage(subject: "x", data: []), data: [])
        }
        #expect(throws: NATSError.self) { try requester.publish("bad subject", data: []) }
    }
}
