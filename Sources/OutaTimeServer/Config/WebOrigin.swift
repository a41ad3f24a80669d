/// A web origin (RFC 6454): `http` or `https`, a host, and a port, as a
/// browser's `Origin` header names a page's origin. The form
/// `--http-allow-origin` takes and what `GET /ws`'s `Origin` is compared
/// with (protocol "WebSocket transport", origin rules).
///
/// Two spellings of one origin compare equal: scheme and host are
/// lower-cased and the scheme's default port (80, 443) is dropped, as
/// browsers send it.
public struct WebOrigin: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`.
    public let scheme: String
    /// A DNS name, an IPv4 address, or an IPv6 address in brackets; lower-cased.
    public let host: String
    /// The port, nil for the scheme's default.
    public let port: Int?

    /// `scheme://host[:port]`, as an `Origin` header spells it.
    public var description: String {
        port.map { "\(scheme)://\(host):\($0)" } ?? "\(scheme)://\(host)"
    }

    /// Reads `scheme://host[:port]` (a trailing `/` allowed); nil for any
    /// other form (a path, a query, user info, another scheme, `null`).
    public init?(_ text: String) {
        let lowered = text.lowercased()
        let scheme: String
        if lowered.hasPrefix("http://") {
            scheme = "http"
        } else if lowered.hasPrefix("https://") {
            scheme = "https"
        } else {
            return nil
        }
        var rest = Substring(lowered.dropFirst(scheme.count + 3))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard let authority = WebOrigin.authority(rest, defaultPort: scheme == "https" ? 443 : 80) else { return nil }
        self.scheme = scheme
        self.host = authority.host
        self.port = authority.port
    }

    /// The origin of a page served by us at `scheme` whose request named
    /// `hostField` (the `Host` header: `host[:port]`); nil if malformed.
    public init?(scheme: String, hostField: String) {
        guard let authority = WebOrigin.authority(Substring(hostField.lowercased()),
                                                  defaultPort: scheme == "https" ? 443 : 80) else { return nil }
        self.scheme = scheme
        self.host = authority.host
        self.port = authority.port
    }

    /// Splits `host[:port]` (IPv6 in brackets); the default port becomes nil.
    static func authority(_ text: Substring, defaultPort: Int) -> (host: String, port: Int?)? {
        var host = text
        var port: Int?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[...close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let value = portNumber(after.dropFirst()) else { return nil }
                port = value
            }
            let inside = host.dropFirst().dropLast()
            guard !inside.isEmpty, inside.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
        } else {
            if let colon = text.lastIndex(of: ":") {
                host = text[..<colon]
                guard let value = portNumber(text[text.index(after: colon)...]) else { return nil }
                port = value
            }
            let allowed = "abcdefghijklmnopqrstuvwxyz0123456789-."
            guard !host.isEmpty, host.count <= 253, host.allSatisfy({ allowed.contains($0) }) else { return nil }
        }
        return (String(host), port == defaultPort ? nil : port)
    }

    private static func portNumber(_ digits: Substring) -> Int? {
        guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let value = Int(digits), (1...65535).contains(value) else { return nil }
        return value
    }

    /// Whether `host` is a loopback name or address: `localhost`, an IPv4
    /// address in 127.0.0.0/8, or `[::1]`. What a `Host` header must name
    /// without `--tokens`: a page from any other name could be a DNS
    /// rebinding of a hostile site onto this server.
    public var isLoopback: Bool {
        if host == "localhost" || host == "[::1]" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Reads `--http-allow-origin`'s value; the error names the value and the form allowed.
    public static func parse(allowOrigin text: String) throws(ConfigError) -> WebOrigin {
        guard let origin = WebOrigin(text) else {
            throw ConfigError(message: "--http-allow-origin \(text.debugDescription) is not an origin: use "
                + "scheme://host[:port] with scheme http or https and no path, e.g. https://boards.example "
                + "or http://localhost:8080")
        }
        return origin
    }
}
