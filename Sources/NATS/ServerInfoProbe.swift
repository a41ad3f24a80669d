#if canImport(Glibc)
import Glibc
#endif

/// Reads a nats-server's version from the `INFO {...}` line every server
/// sends first on a new TCP connection (before TLS, before CONNECT).
enum ServerInfoProbe {
    /// Connects to `url` (`nats://host:port`), reads the INFO line within
    /// `timeout`, and parses its `"version"`.
    static func version(url: String, timeout: Duration) throws(NATSError) -> NATSServerVersion {
        let line = try infoLine(url: url, timeout: timeout)
        guard let text = versionField(in: line) else {
            throw .status(operation: "read the server version from \(url)", code: -1, text: "no \"version\" in the INFO line '\(line.prefix(200))'")
        }
        guard let version = NATSServerVersion(text) else {
            throw .status(operation: "read the server version from \(url)", code: -1, text: "unparsable version '\(text)'")
        }
        return version
    }

    /// The value of `"version":"…"` in an INFO line (the JSON is flat here).
    static func versionField(in line: String) -> String? {
        guard let key = line.firstRange(of: "\"version\"") else { return nil }
        let rest = line[key.upperBound...].drop(while: { $0 == " " || $0 == ":" })
        guard rest.first == "\"" else { return nil }
        let value = rest.dropFirst().prefix { $0 != "\"" }
        return String(value)
    }

    /// Host and port of `nats://[user@]host:port`.
    static func hostPort(_ url: String) throws(NATSError) -> (String, String) {
        var rest = Substring(url)
        if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        guard let colon = rest.lastIndex(of: ":"), !rest[..<colon].isEmpty, Int(rest[rest.index(after: colon)...]) != nil else {
            return (String(rest), "4222")
        }
        var host = rest[..<colon]
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        return (String(host), String(rest[rest.index(after: colon)...]))
    }

    private static func infoLine(url: String, timeout: Duration) throws(NATSError) -> String {
        let operation = "read INFO from \(url)"
        let (host, port) = try hostPort(url)
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, port, &hints, &list) == 0, let first = list else {
            throw .status(operation: operation, code: -1, text: "cannot resolve host '\(host)'")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw .status(operation: operation, code: errno, text: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var limit = timeval(tv_sec: Int(timeout.milliseconds / 1000), tv_usec: Int(timeout.milliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            throw .status(operation: operation, code: errno, text: "connect: \(String(cString: strerror(errno)))")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !bytes.contains(0x0A) {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { throw .timeout(operation: operation) }
            guard count > 0 else { throw .status(operation: operation, code: errno, text: "the server closed before sending INFO") }
            bytes += chunk[..<count]
            if bytes.count > 65_536 { throw .status(operation: operation, code: -1, text: "no line end in the first 64 KiB") }
        }
        let line = String(decoding: bytes.prefix { $0 != 0x0A }, as: UTF8.self)
        guard line.hasPrefix("INFO ") else {
            throw .status(operation: operation, code: -1, text: "the server's first line is not INFO: '\(line.prefix(80))'")
        }
        return line
    }
}
