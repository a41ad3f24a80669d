import OutaTimeTestSupport
import Foundation
import OutaTimeClient
import OutaTimeProtocol
import Testing

/// `hello` and request/reply correlation against the real server.
@Suite("Requests")
struct RequestTests {
    @Test("hello makes the connection ready and reports the session")
    func hello() throws {
        try withTestServer { server in
            try withClientLoop { clients in
                var states: [ConnectionState] = []
                let connection = clients.connect(port: server.port)
                connection.onStateChange = { states.append($0) }
                clients.expect("ready") { connection.isReady }
                let hello = try #require(connection.hello)
                #expect(hello.server.hasPrefix("outatime/"))
                #expect(hello.protocol == 1)
                #expect(!hello.session.isEmpty)
                #expect(hello.role == "operate")
                #expect(hello.heartbeatMs == 15_000)
                #expect(states == [.ready])
                #expect(connection.stats.connects == 1)
                connection.close()
                #expect(connection.state == .closed(nil))
            }
        }
    }

    @Test("many pipelined requests, made before and after hello, each get their own reply")
    func correlation() throws {
        try withTestServer { server in
            try withClientLoop { clients in
                let connection = clients.connect(port: server.port)
                var outcomes: [Int: Result<JSONValue, ClientError>] = [:]
                var expected: [Int: String] = [:]
                func issue(_ index: Int) {
                    let (type, channel): (String, String) = switch index % 4 {
                    case 0: ("get", "laps/r\(index)")
                    case 1: ("history", "timers/h\(index)")
                    case 2: ("ping", "")
                    default: ("get", "bad channel \(index)")
                    }
                    expected[index] = channel
                    let fields: [String: JSONValue] = channel.isEmpty ? [:] : ["channel": .string(channel)]
                    connection.request(type, fields: fields) { outcomes[index] = $0 }
                }
                // Queued while connecting: sent in order right after hello.
                for index in 0..<100 { issue(index) }
                #expect(!connection.isReady)
                clients.expect("ready") { connection.isReady }
                for index in 100..<400 { issue(index) }
                clients.expect("400 replies") { outcomes.count == 400 }

                for index in 0..<400 {
                    let outcome = try #require(outcomes[index])
                    switch (index % 4, outcome) {
                    case (0, .success(let result)), (1, .success(let result)):
                        #expect(result.channel == expected[index], "request \(index)")
                    case (2, .success(let result)):
                        #expect(result.object?["time"] != nil, "request \(index)")
                    case (3, .failure(.server(let error))):
                        #expect(error.errorCode == .invalidChannel, "request \(index)")
                        #expect(error.message.contains("bad channel \(index)"))
                    default:
                        Issue.record("request \(index): unexpected \(outcome)")
                    }
                }
            }
        }
    }

    @Test("typed requests decode their results; server errors keep their code and message")
    func typedRequests() throws {
        try withTestServer { server in
            try withClientLoop { clients in
                let connection = clients.connect(port: server.port)
                var get: Result<GetResult, ClientError>?
                var list: Result<ListResult, ClientError>?
                var command: Result<JSONValue, ClientError>?
                var refused: Result<JSONValue, ClientError>?
                connection.send(.get("delorean/main")) { get = $0 }
                connection.send(.list()) { list = $0 }
                connection.command("delorean/main", action: "set_destination",
                                   args: ["time": .string("1955-11-12T22:04:00Z")]) { command = $0 }
                connection.command("delorean/main", action: "fly") { refused = $0 }
                clients.expect("four replies") { get != nil && list != nil && command != nil && refused != nil }

                let gotten = try get?.get()
                let car = try #require(gotten)
                #expect(car.kind == .delorean && car.seq == 0)
                let names = try list?.get().channels.map(\.channel)
                #expect(names == ["delorean/main"])
                let destination = try command?.get().object?["destination_time"]
                #expect(destination == .string("1955-11-12T22:04:00Z"))
                guard case .failure(.server(let error)) = refused else {
                    Issue.record("expected unknown_action, got \(String(describing: refused))")
                    return
                }
                #expect(error.errorCode == .unknownAction)
            }
        }
    }

    @Test("a request longer than the server's max_frame fails locally; the connection stays")
    func tooLarge() throws {
        try withTestServer({ $0.maxFrame = 1_024 }) { server in
            try withClientLoop { clients in
                let connection = clients.connect(port: server.port)
                clients.expect("ready") { connection.isReady }
                var big: Result<PublishResult, ClientError>?
                var small: Result<PublishResult, ClientError>?
                connection.send(.publish("laps/x", data: .string(String(repeating: "x", count: 2_000)))) { big = $0 }
                connection.send(.publish("laps/x", data: .string("ok"))) { small = $0 }
                clients.expect("both replies") { big != nil && small != nil }
                guard case .failure(.invalidRequest(let why))? = big else {
                    Issue.record("expected invalidRequest, got \(String(describing: big))")
                    return
                }
                #expect(why.contains("max_frame of 1024"))
                let delivered = try small?.get().delivered
                #expect(delivered == 0)
                #expect(connection.stats.disconnects == 0)
            }
        }
    }

    @Test("requests fail with closed once the connection is closed, also those still queued")
    func closedFailsRequests() throws {
        try withClientLoop { clients in
            // Nothing listens there: the request waits in the backlog.
            let connection = clients.connect(port: try unusedPort()) { $0.reconnect = true }
            var early: Result<JSONValue, ClientError>?
            connection.request("ping") { early = $0 }
            connection.close()
            guard case .failure(.closed(nil)) = early else {
                Issue.record("expected closed, got \(String(describing: early))")
                return
            }
            var late: Result<JSONValue, ClientError>?
            connection.request("ping") { late = $0 }
            guard case .failure(.closed(nil)) = late else {
                Issue.record("expected closed, got \(String(describing: late))")
                return
            }
        }
    }

    @Test("a request that waits too long fails with timedOut")
    func requestTimeout() throws {
        try withClientLoop { clients in
            let connection = clients.connect(port: try unusedPort()) { $0.requestTimeoutMs = 50 }
            var outcome: Result<JSONValue, ClientError>?
            connection.request("ping") { outcome = $0 }
            clients.expect("timeout") { outcome != nil }
            #expect(outcome.map { if case .failure(.timedOut) = $0 { true } else { false } } == true)
        }
    }
}

extension JSONValue {
    /// The object's fields, or nil for any other value.
    var object: [String: JSONValue]? {
        if case .object(let fields) = self { fields } else { nil }
    }

    /// The `channel` field of a result object.
    var channel: String? {
        if case .string(let name)? = object?["channel"] { name } else { nil }
    }
}
