import CNats

/// Core NATS: publish, subscribe, request/reply.
extension NATSConnection {
    /// Publishes `data` (with `headers`) to `subject`; returns once libnats
    /// has the message (with SendAsap, once it is written to the socket).
    public func publish(_ subject: String, data: [UInt8], headers: [String: String] = [:], reply: String? = nil) throws(NATSError) {
        let message = try OutgoingMessage(subject: subject, reply: reply, data: data, headers: headers)
        try check(natsConnection_PublishMsg(pointer, message.pointer), "publish to '\(subject)'")
    }

    /// Answers a request: publishes to `message`'s reply subject; throws
    /// ``NATSError/invalidArgument(_:)`` when it has none.
    public func respond(to message: NATSMessage, data: [UInt8], headers: [String: String] = [:]) throws(NATSError) {
        guard let reply = message.reply else {
            throw .invalidArgument("the message on '\(message.subject)' has no reply subject to respond to")
        }
        try publish(reply, data: data, headers: headers)
    }

    /// Sends a request and waits up to `timeout` for the first reply. Throws
    /// ``NATSError/noResponders(subject:)`` when nobody listens and
    /// ``NATSError/timeout(operation:)`` when nobody answers in time.
    public func request(_ subject: String, data: [UInt8], headers: [String: String] = [:], timeout: Duration) throws(NATSError) -> NATSMessage {
        let message = try OutgoingMessage(subject: subject, data: data, headers: headers)
        var reply: OpaquePointer?
        let status = natsConnection_RequestMsg(&reply, pointer, message.pointer, timeout.milliseconds)
        if status == NATS_NO_RESPONDERS { throw .noResponders(subject: subject) }
        try check(status, "request to '\(subject)'")
        defer { natsMsg_Destroy(reply) }
        return NATSMessage(copying: reply!)
    }

    /// Subscribes to `subject` (wildcards allowed), optionally in a queue
    /// group. `handler` runs on a libnats delivery thread, one message at a
    /// time per subscription, in arrival order; it must not block for long.
    public func subscribe(_ subject: String, queue: String? = nil, handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> NATSSubscription {
        guard !subject.isEmpty else { throw .invalidArgument("cannot subscribe to an empty subject") }
        let closure = Trampolines.retain(SubscriptionBox(handler: handler))
        var sub: OpaquePointer?
        let status = if let queue {
            natsConnection_QueueSubscribe(&sub, pointer, subject, queue, Trampolines.onMessage, closure)
        } else {
            natsConnection_Subscribe(&sub, pointer, subject, Trampolines.onMessage, closure)
        }
        guard status == NATS_OK else {
            Trampolines.releaseSubscription(closure)
            throw NATSError.from(status, operation: "subscribe to '\(subject)'")
        }
        let complete = natsSubscription_SetOnCompleteCB(sub, Trampolines.onSubscriptionComplete, closure)
        guard complete == NATS_OK else {
            let error = NATSError.from(complete, operation: "subscribe to '\(subject)'")
            natsSubscription_Unsubscribe(sub)
            natsSubscription_Destroy(sub)
            // The box is leaked rather than freed under a delivery that may still run.
            throw error
        }
        return NATSSubscription(pointer: sub!, subject: subject, connection: self)
    }
}
