import CNats

/// A live subscription made by ``NATSConnection/subscribe(_:queue:handler:)``.
/// Unsubscribed when released, if not before.
public final class NATSSubscription: @unchecked Sendable {
    // @unchecked: libnats subscriptions are safe to use from any thread.
    private let pointer: OpaquePointer
    /// The subject (or wildcard) subscribed to.
    public let subject: String
    // Keeps the connection alive while the subscription is.
    private let connection: NATSConnection

    init(pointer: OpaquePointer, subject: String, connection: NATSConnection) {
        self.pointer = pointer
        self.subject = subject
        self.connection = connection
    }

    /// Stops deliveries at once; messages still queued are dropped.
    public func unsubscribe() throws(NATSError) {
        let status = natsSubscription_Unsubscribe(pointer)
        if status == NATS_INVALID_SUBSCRIPTION { return }  // already closed
        try check(status, "unsubscribe from '\(subject)'")
    }

    /// Stops taking new messages, delivers those already queued, and waits
    /// (up to `timeout`) until the handler has seen the last of them.
    public func drain(timeout: Duration = .seconds(5)) throws(NATSError) {
        try check(natsSubscription_Drain(pointer), "drain '\(subject)'")
        try check(natsSubscription_WaitForDrainCompletion(pointer, timeout.milliseconds), "wait for the drain of '\(subject)'")
    }

    deinit {
        // Destroy unsubscribes a subscription still open; the handler box is
        // released by the completion callback after the last delivery.
        natsSubscription_Destroy(pointer)
    }
}
