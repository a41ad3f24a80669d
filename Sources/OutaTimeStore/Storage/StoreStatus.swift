import Foundation

/// What a ``DurableStore`` says about itself to operators (`stats`,
/// `/metrics`, `/healthz`, `/readyz`): a small value the server reads on its
/// loop, so a backend keeps it up to date as things happen and hands over a
/// copy (``DurableStore/status``) without blocking or doing I/O.
public struct StoreStatus: Sendable, Equatable {
    /// ``DurableStore/backendName``: `sqlite` or `jetstream`.
    public var backend: String
    /// The network link of a backend that has one (JetStream: its NATS
    /// connection); nil for SQLite, which is a local file.
    public var link: StoreLink?

    /// A status from its fields.
    public init(backend: String, link: StoreLink? = nil) {
        self.backend = backend
        self.link = link
    }

    /// Why the store cannot write now, in one phrase for `/healthz` and
    /// error messages; nil while it can (or has no link to lose).
    public var outage: String? {
        guard let link, !link.connected else { return nil }
        return link.outage
    }
}

/// A store's connection to the servers that keep its data (JetStream: the
/// NATS connection), as its client library last reported it.
public struct StoreLink: Sendable, Equatable {
    /// Connected now. False from the moment the client library reports the
    /// connection lost (a closed socket at once; a server that stopped
    /// answering after the missed pings, JetStreamStore's `pingInterval`)
    /// until it reports it back, and for good after ``closed``.
    public var connected: Bool
    /// The server connected to, or while disconnected the last one.
    public var url: String?
    /// Times the link came back after a loss.
    public var reconnects: Int
    /// When the current loss began (wall clock, for people); nil while connected.
    public var downSince: Date?
    /// Closed for good (the store was closed, or the library gave up).
    public var closed: Bool
    /// Writes sent again because their acknowledgement did not come in time.
    public var ackRetries: Int
    /// Retried writes found to be stored already (their first ack was lost).
    public var lostAcksResolved: Int

    /// A link from its fields.
    public init(connected: Bool, url: String?, reconnects: Int = 0, downSince: Date? = nil, closed: Bool = false,
                ackRetries: Int = 0, lostAcksResolved: Int = 0) {
        self.connected = connected
        self.url = url
        self.reconnects = reconnects
        self.downSince = downSince
        self.closed = closed
        self.ackRetries = ackRetries
        self.lostAcksResolved = lostAcksResolved
    }

    /// One phrase naming the loss: `the NATS link to nats://h:4222 is down
    /// since 2026-11-27T20:41:03Z (12 s; reconnecting)`.
    public var outage: String {
        let server = url.map { " to \($0)" } ?? ""
        if closed { return "the NATS link\(server) is closed" }
        guard let downSince else { return "the NATS link\(server) is down (reconnecting)" }
        let seconds = max(0, Int(Date().timeIntervalSince(downSince)))
        let since = ISO8601DateFormatter().string(from: downSince)
        return "the NATS link\(server) is down since \(since) (\(seconds) s; reconnecting)"
    }
}
