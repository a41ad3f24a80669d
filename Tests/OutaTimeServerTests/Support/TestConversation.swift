import Foundation

/// The protocol's conversation above the framing, shared by the test
/// clients of every transport (as the server's `Connection` shares all
/// above its framing seam): ``TestClient`` (length-prefixed frames over
/// TCP) and ``WebSocketTestClient`` (RFC 6455 messages over `/ws`) give
/// one message in each direction; requests, replies, pushes and `hello`
/// are written once, here.
protocol TestConversation: AnyObject {
    /// The next request id.
    var nextID: Int { get set }
    /// Frames read while waiting for something else, in arrival order.
    var pushes: [[String: Any]] { get set }
    /// Every frame read, for failure messages.
    var transcript: [[String: Any]] { get }
    /// Sends one protocol message.
    func sendMessage(_ json: [String: Any]) throws
    /// Reads the next protocol message, waiting at most `timeout` seconds.
    func readMessage(timeout: Double) throws -> [String: Any]
}

extension TestConversation {
    /// The first message of `type`: taken from ``pushes`` if one is waiting
    /// there, else read; messages of other types are kept in ``pushes``.
    func readUntil(type: String, timeout: Double = TestClient.defaultTimeout) throws -> [String: Any] {
        if let index = pushes.firstIndex(where: { $0.type == type }) {
            return pushes.remove(at: index)
        }
        let deadline = Date().addingTimeInterval(timeout)
        for _ in 0..<TestClient.frameBudget {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { break }
            let message = try readMessage(timeout: remaining)
            if message.type == type { return message }
            pushes.append(message)
        }
        throw TestClientError.timedOut("a '\(type)' frame; seen: \(describe(transcript))")
    }

    /// Sends a request with a fresh integer id and returns the reply with
    /// that id; every other message seen meanwhile goes to ``pushes``.
    @discardableResult
    func request(_ type: String, _ fields: [String: Any] = [:], timeout: Double = TestClient.defaultTimeout) throws -> [String: Any] {
        let id = nextID
        nextID += 1
        var json = fields
        json["type"] = type
        json["id"] = id
        try sendMessage(json)
        return try readReply(id: id, timeout: timeout)
    }

    /// Reads until the reply whose id is `id`; other messages go to ``pushes``.
    func readReply(id: Int, timeout: Double = TestClient.defaultTimeout) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        for _ in 0..<TestClient.frameBudget {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { break }
            let message = try readMessage(timeout: remaining)
            if message.type == "reply", message["id"] as? Int == id { return message }
            pushes.append(message)
        }
        throw TestClientError.timedOut("the reply to id \(id); seen: \(describe(transcript))")
    }

    /// Like ``request(_:_:timeout:)`` but requires `ok: true` and returns `result`.
    @discardableResult
    func call(_ type: String, _ fields: [String: Any] = [:]) throws -> [String: Any] {
        let reply = try request(type, fields)
        guard reply["ok"] as? Bool == true, let result = reply[object: "result"] else {
            throw TestClientError.failed("\(type) \(fields): \(describe([reply]))")
        }
        return result
    }

    /// `hello` (protocol 1) with the fields given; returns its `result`.
    func helloResult(name: String?, token: String?, client: String?) throws -> [String: Any] {
        var fields: [String: Any] = ["protocol": 1]
        if let name { fields["name"] = name }
        if let token { fields["token"] = token }
        if let client { fields["client"] = client }
        return try call("hello", fields)
    }
}
