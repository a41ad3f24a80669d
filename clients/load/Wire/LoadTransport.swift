import ArgumentParser

/// How a load connection carries protocol frames (`--transport`): the
/// length-prefixed frames of the TCP listener, or WebSocket text messages
/// on the HTTP listener's `/ws`. The scenarios never see the difference:
/// ``LoadConnection`` is the one place that knows it.
enum LoadTransport: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// 4-byte length + JSON body, on the TCP (or TLS) port.
    case tcp
    /// `GET /ws` upgrade on the HTTP listener (`--http`), then one masked
    /// text message per frame body (RFC 6455); over TLS when `--tls`.
    case ws

    /// The name reports print (`"tcp"`, `"ws"`).
    var name: String { rawValue }
}
