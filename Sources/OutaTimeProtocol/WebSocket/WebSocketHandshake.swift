import Foundation

/// Why an upgrade request was refused: the HTTP status to answer with
/// (400 for a malformed upgrade, 426 for another WebSocket version), a
/// message naming the bad value and what is allowed, and the fields the
/// answer must carry (426 names the version served).
public struct WebSocketHandshakeRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// `.badRequest` or `.upgradeRequired`.
    public let status: HTTPStatus
    /// One line for the response body and the log.
    public let message: String
    /// Extra response fields, e.g. `Sec-WebSocket-Version: 13` with a 426.
    public let fields: [HTTPRequestHead.Field]

    /// A refusal with `status`, `message` and extra response `fields`.
    public init(_ status: HTTPStatus, _ message: String, fields: [HTTPRequestHead.Field] = []) {
        self.status = status
        self.message = message
        self.fields = fields
    }

    /// `<status> <reason phrase>: <message>`.
    public var description: String { "\(status.rawValue) \(status.reasonPhrase): \(message)" }
}

/// The opening handshake of RFC 6455 §4, server side: checking the
/// client's upgrade request and answering `101 Switching Protocols`.
///
/// No extension is accepted (`permessage-deflate` is declined by leaving
/// `Sec-WebSocket-Extensions` out of the answer, §9.1) and no subprotocol is
/// chosen (a `Sec-WebSocket-Protocol` offer is ignored, §4.2.2). Which path
/// upgrades, and the `Origin` and `Host` rules, are the server's business.
public enum WebSocketHandshake {
    /// The GUID appended to the key before hashing (RFC 6455 §1.3).
    public static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    /// The one version served.
    public static let version = "13"

    /// `Sec-WebSocket-Accept` for `key`: base64 of the SHA-1 of the key
    /// followed by the GUID. `sha1` hashes bytes (the `UV` module's `SHA1.digest`).
    public static func accept(key: String, sha1: ([UInt8]) -> [UInt8]) -> String {
        Data(sha1(Array((key + guid).utf8))).base64EncodedString()
    }

    /// Checks an upgrade head: `GET`, HTTP/1.1, `Upgrade: websocket`,
    /// `Connection` with the `Upgrade` option, `Sec-WebSocket-Version: 13`
    /// (another version: 426) and one `Sec-WebSocket-Key` that is the base64
    /// of 16 bytes. Returns the key, or the refusal.
    public static func validate(_ head: HTTPRequestHead) -> Result<String, WebSocketHandshakeRefusal> {
        func refuse(_ message: String) -> Result<String, WebSocketHandshakeRefusal> {
            .failure(WebSocketHandshakeRefusal(.badRequest, message))
        }
        guard head.method == .get else {
            return refuse("a WebSocket upgrade must be a GET, not \(head.method.rawValue)")
        }
        guard head.version == .http11 else {
            return refuse("a WebSocket upgrade needs HTTP/1.1, not \(head.version.rawValue)")
        }
        let upgrade = options(head, "upgrade")
        guard upgrade.contains("websocket") else {
            return refuse(upgrade.isEmpty
                ? "the request has no Upgrade header; a WebSocket upgrade sends 'Upgrade: websocket'"
                : "Upgrade is '\(quoted(head.field("upgrade")))'; a WebSocket upgrade sends 'Upgrade: websocket'")
        }
        guard options(head, "connection").contains("upgrade") else {
            return refuse("Connection is '\(quoted(head.field("connection")))'; a WebSocket upgrade sends 'Connection: Upgrade'")
        }
        let versions = head.fields.filter { $0.name == "sec-websocket-version" }.map(\.value)
        guard !versions.isEmpty else {
            return refuse("the request has no Sec-WebSocket-Version header; send 'Sec-WebSocket-Version: 13'")
        }
        guard versions == [version] else {
            return .failure(WebSocketHandshakeRefusal(.upgradeRequired,
                "Sec-WebSocket-Version '\(quoted(versions.joined(separator: ", ")))' is not served; the version served is 13",
                fields: [HTTPRequestHead.Field(name: "Sec-WebSocket-Version", value: version)]))
        }
        let keys = head.fields.filter { $0.name == "sec-websocket-key" }.map(\.value)
        guard keys.count == 1, let key = keys.first else {
            return refuse(keys.isEmpty
                ? "the request has no Sec-WebSocket-Key header; send the base64 of 16 random bytes"
                : "the request has \(keys.count) Sec-WebSocket-Key headers; send one")
        }
        guard key.utf8.count == 24, let decoded = Data(base64Encoded: key), decoded.count == 16 else {
            return refuse("Sec-WebSocket-Key '\(quoted(key))' is not the base64 of 16 bytes (24 characters ending in '==')")
        }
        return .success(key)
    }

    /// The `101 Switching Protocols` answer carrying `accept`: after it, both
    /// ends speak WebSocket frames.
    public static func response(accept: String) -> [UInt8] {
        Array(("HTTP/1.1 101 Switching Protocols\r\n"
            + "Upgrade: websocket\r\n"
            + "Connection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(accept)\r\n\r\n").utf8)
    }

    /// The comma-separated options of every field named `name`, lower-cased.
    private static func options(_ head: HTTPRequestHead, _ name: String) -> [Substring] {
        head.fields.filter { $0.name == name }
            .flatMap { $0.value.split(separator: ",") }
            .map { Substring($0.trimmingSpaces().lowercased()) }
    }

    /// At most 60 characters of a header value for a message; "" when absent.
    private static func quoted(_ value: String?) -> String {
        guard let value else { return "" }
        return value.count > 60 ? value.prefix(60) + "…" : value
    }
}
