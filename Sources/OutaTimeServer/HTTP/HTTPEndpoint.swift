import OutaTimeProtocol

/// Where the HTTP listener (`--http`) listens: `HOST:PORT`, `[IPv6]:PORT`,
/// or a bare `PORT` on loopback. Port 0 picks a free one.
public struct HTTPEndpoint: Sendable, Equatable {
    /// A numeric address.
    public var host: String
    /// 0 picks a free port.
    public var port: Int

    public init(host: String = "127.0.0.1", port: Int) {
        self.host = host
        self.port = port
    }

    /// Reads `--http`'s value; the error names the value and the forms allowed.
    public static func parse(_ text: String) throws(ConfigError) -> HTTPEndpoint {
        let allowed = "HOST:PORT, [IPv6]:PORT or PORT (loopback), PORT 0…65535"
        func port(_ digits: Substring) throws(ConfigError) -> Int {
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy(\.isASCII), let value = Int(digits),
                  (0...65535).contains(value) else {
                throw ConfigError(message: "--http \(text): '\(digits)' is not a TCP port; use \(allowed)")
            }
            return value
        }
        if let bracket = text.firstIndex(of: "]"), text.hasPrefix("[") {
            let host = text[text.index(after: text.startIndex)..<bracket]
            let rest = text[text.index(after: bracket)...]
            guard rest.hasPrefix(":"), !host.isEmpty else {
                throw ConfigError(message: "--http \(text): expected [IPv6]:PORT; use \(allowed)")
            }
            return HTTPEndpoint(host: String(host), port: try port(rest.dropFirst()))
        }
        guard let colon = text.lastIndex(of: ":") else {
            return HTTPEndpoint(port: try port(Substring(text)))
        }
        let host = text[..<colon]
        guard !host.isEmpty, !host.contains(":") else {
            throw ConfigError(message: "--http \(text): write an IPv6 address in brackets; use \(allowed)")
        }
        return HTTPEndpoint(host: String(host), port: try port(text[text.index(after: colon)...]))
    }
}
