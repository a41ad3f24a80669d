import CNats

/// Every C callback of the NATS layer, and every `Unmanaged` conversion.
///
/// libnats calls these on its own threads (the connection's callback thread,
/// the global message-delivery pool), never on an OutaTime event loop. Each
/// recovers the Swift box passed as `closure` and forwards. Lifetimes:
/// - ``ConnectionEvents``: retained once when the options are built, released
///   by ``onClosed`` (libnats calls it last, exactly once, for a connection
///   that was made) or by ``releaseEvents(_:)`` when connecting failed;
/// - ``SubscriptionBox``: retained once at subscribe, released by
///   ``onSubscriptionComplete``, which libnats calls after the last message
///   callback of a closed subscription has returned.
enum Trampolines {
    static let onDisconnected: natsConnectionHandler = { _, closure in
        Unmanaged<ConnectionEvents>.fromOpaque(closure!).takeUnretainedValue().disconnected?()
    }

    static let onReconnected: natsConnectionHandler = { _, closure in
        Unmanaged<ConnectionEvents>.fromOpaque(closure!).takeUnretainedValue().reconnected?()
    }

    static let onClosed: natsConnectionHandler = { _, closure in
        Unmanaged<ConnectionEvents>.fromOpaque(closure!).takeRetainedValue().closed?()
    }

    static let onMessage: natsMsgHandler = { _, _, msg, closure in
        let message = NATSMessage(copying: msg!)
        natsMsg_Destroy(msg)
        Unmanaged<SubscriptionBox>.fromOpaque(closure!).takeUnretainedValue().handler(message)
    }

    static let onSubscriptionComplete: natsOnCompleteCB = { closure in
        Unmanaged<SubscriptionBox>.fromOpaque(closure!).release()
    }

    /// One retain handed to libnats as a callback closure.
    static func retain(_ object: AnyObject) -> UnsafeMutableRawPointer {
        Unmanaged.passRetained(object).toOpaque()
    }

    /// Balances ``retain(_:)`` for events whose connection was never made.
    static func releaseEvents(_ closure: UnsafeMutableRawPointer) {
        Unmanaged<ConnectionEvents>.fromOpaque(closure).release()
    }

    /// Balances ``retain(_:)`` for a subscription that failed or whose
    /// completion callback could not be set.
    static func releaseSubscription(_ closure: UnsafeMutableRawPointer) {
        Unmanaged<SubscriptionBox>.fromOpaque(closure).release()
    }
}

/// The connection event closures, kept alive while libnats may call them.
final class ConnectionEvents: Sendable {
    let disconnected: (@Sendable () -> Void)?
    let reconnected: (@Sendable () -> Void)?
    let closed: (@Sendable () -> Void)?

    init(disconnected: (@Sendable () -> Void)?, reconnected: (@Sendable () -> Void)?, closed: (@Sendable () -> Void)?) {
        self.disconnected = disconnected
        self.reconnected = reconnected
        self.closed = closed
    }
}

/// A subscription's handler, kept alive until its last delivery.
final class SubscriptionBox: Sendable {
    let handler: @Sendable (NATSMessage) -> Void

    init(handler: @escaping @Sendable (NATSMessage) -> Void) { self.handler = handler }
}
