import OutaTimeProtocol
import UV

/// A request waiting for its reply.
struct PendingRequest {
    /// Loop time after which it fails with ``ClientError/timedOut``; nil: never.
    let deadline: UInt64?
    let completion: (Result<JSONValue, ClientError>) -> Void
}

/// A request made while the connection was not ready.
struct QueuedRequest {
    let type: String
    let fields: [String: JSONValue]
    let pending: PendingRequest
}

/// Requests and replies: ids, the backlog before `hello`, deadlines.
extension OutaTimeConnection {
    /// Sends a request and calls `completion` once with its reply's `result`
    /// or the failure. Every request carries an id; replies are matched by
    /// it, so any number may be in flight (the server answers in order).
    ///
    /// Before the connection is ready the request waits (in order) and is
    /// sent right after `hello` and the restored subscriptions. A request in
    /// flight when the connection drops fails with
    /// ``ClientError/disconnected``: it may or may not have run, so it is
    /// not sent again. `timeoutMs` (default ``ClientOptions/requestTimeoutMs``)
    /// counts from this call.
    ///
    /// `fields` are the request's fields besides `type` and `id`. Use
    /// ``subscribe(_:completion:)`` rather than a raw `subscribe`, which
    /// keeps no mirror and is not restored after a reconnect.
    public func request(
        _ type: String,
        fields: [String: JSONValue] = [:],
        timeoutMs: UInt64? = nil,
        completion: @escaping (Result<JSONValue, ClientError>) -> Void
    ) {
        if case .closed(let reason) = state {
            completion(.failure(.closed(reason)))
            return
        }
        loop.updateTime()
        let deadline = (timeoutMs ?? options.requestTimeoutMs).map { loop.now + $0 }
        let pending = PendingRequest(deadline: deadline, completion: completion)
        if let link, link.isReady {
            transmit(type: type, fields: fields, pending: pending, on: link)
        } else {
            backlog.append(QueuedRequest(type: type, fields: fields, pending: pending))
        }
        if let deadline { armDeadline(deadline) }
    }

    /// Sends a typed request (``ClientRequest``) and decodes its result.
    public func send<Result: Decodable>(
        _ request: ClientRequest<Result>,
        timeoutMs: UInt64? = nil,
        completion: @escaping (Swift.Result<Result, ClientError>) -> Void
    ) {
        self.request(request.type, fields: request.fields, timeoutMs: timeoutMs) { outcome in
            completion(outcome.flatMap { json in Swift.Result { () throws(ClientError) in try json.decode(Result.self) } })
        }
    }

    /// Runs a `command` (``ClientRequest/command(_:action:args:)``); the
    /// result is action-specific.
    public func command(
        _ channel: String,
        action: String,
        args: [String: JSONValue] = [:],
        completion: @escaping (Result<JSONValue, ClientError>) -> Void
    ) {
        send(.command(channel, action: action, args: args), completion: completion)
    }

    /// A request without a deadline, for the connection's own use
    /// (heartbeats, subscriptions): written now if ready, else dropped.
    func internalRequest(_ type: String, fields: [String: JSONValue],
                         completion: @escaping (Result<JSONValue, ClientError>) -> Void) {
        guard let link, link.isReady else { return }
        transmit(type: type, fields: fields, pending: PendingRequest(deadline: nil, completion: completion), on: link)
    }

    /// A reply arrived: hand it to its request.
    func replied(_ id: RequestID, _ result: Result<JSONValue, ServerError>) {
        // Ids this client sends are integers; anything else is not ours.
        guard case .int(let number) = id, let pending = inFlight.removeValue(forKey: number) else { return }
        pending.completion(result.mapError(ClientError.server))
    }

    /// Sends what waited for `hello`, in order; drops what expired meanwhile.
    func sendBacklog() {
        let queued = backlog
        backlog = []
        for (index, request) in queued.enumerated() {
            guard let link, link.isReady else {
                // A completion dropped the link: keep the rest for the next one.
                backlog = Array(queued[index...]) + backlog
                return
            }
            transmit(type: request.type, fields: request.fields, pending: request.pending, on: link)
        }
    }

    /// Arms the deadline timer for `deadline` unless it fires earlier already.
    func armDeadline(_ deadline: UInt64) {
        guard let handles else { return }
        if let armed = armedDeadline, armed <= deadline { return }
        armedDeadline = deadline
        let delay = deadline > loop.now ? deadline - loop.now : 0
        handles.deadlines.start(timeoutMs: delay) { [self] in expireRequests() }
    }

    /// Fails every request past its deadline, then re-arms for the next one.
    private func expireRequests() {
        armedDeadline = nil
        let now = loop.now
        var expired: [(Result<JSONValue, ClientError>) -> Void] = []
        // Oldest first, as they were sent.
        for id in inFlight.keys.sorted() where inFlight[id]!.deadline.map({ $0 <= now }) ?? false {
            expired.append(inFlight.removeValue(forKey: id)!.completion)
        }
        backlog.removeAll { queued in
            guard let deadline = queued.pending.deadline, deadline <= now else { return false }
            expired.append(queued.pending.completion)
            return true
        }
        let next = (inFlight.values.compactMap(\.deadline) + backlog.compactMap(\.pending.deadline)).min()
        if let next { armDeadline(next) }
        for completion in expired { completion(.failure(.timedOut)) }
    }
}
