import OutaTimeProtocol
import UV

/// What a plain connection over a connection limit is sent: an `error`
/// `server_busy` whose message names the limit (and, for the per-address
/// one, the address), then a `bye` `server_busy` — both frames in one chunk,
/// encoded once per limit and address and then shared by every refusal like
/// a broadcast's frame. A flood from one address is thousands of refusals
/// with the same bytes: encoding two messages for each was most of what a
/// refusal cost beyond its syscalls (issue 28).
///
/// At most ``capacity`` different refusals are kept; the next one starts
/// the cache afresh, so many addresses at their limit cannot grow it.
struct RefusalFrames {
    /// Different refusals (limit and address) kept at once.
    static let capacity = 64

    private struct Key: Hashable {
        let limit: ConnectionLimit
        /// The address the message names (nil for the total limit, whose message names none).
        let host: String?
    }

    private var cache: [Key: OwnedBytes] = [:]

    /// The refusal for `limit` and the client at `host`, from the cache or
    /// encoded now with `encoder`. Frames: 2.
    ///
    /// - Throws: `EncodingError` (never for these messages: strings only).
    mutating func bytes(for limit: ConnectionLimit, host: String?, config: ServerConfig,
                        encoder: ReusableMessageEncoder) throws -> OwnedBytes {
        let key = Key(limit: limit, host: limit == .perAddress ? host : nil)
        if let cached = cache[key] { return cached }
        let message = limit.refusal(host: host, config: config)
        let error = try encoder.frame(ErrorPush(error: ProtocolError(.serverBusy, message)))
        let bye = try encoder.frame(ByePush(reason: .serverBusy))
        let bytes = OwnedBytes(Array(error.bytes) + Array(bye.bytes))
        if cache.count >= Self.capacity { cache.removeAll(keepingCapacity: true) }
        cache[key] = bytes
        return bytes
    }
}

extension ConnectionLimit {
    /// The `server_busy` error's message for a connection refused at this
    /// limit (TCP, TLS and WebSocket say the same).
    func refusal(host: String?, config: ServerConfig) -> String {
        switch self {
        case .total:
            "the server holds its maximum of \(config.maxConnections) connections (--max-connections); retry later"
        case .perAddress:
            "address \(host ?? "?") holds its maximum of \(config.maxConnectionsPerAddress) connections "
                + "(--max-connections-per-address); close one or retry later"
        }
    }
}
