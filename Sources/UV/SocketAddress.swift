import CLibUV
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address with a port, parsed from a numeric host.
public struct SocketAddress: Sendable, CustomStringConvertible {
    /// The storage libuv takes as `sockaddr*`.
    var storage = sockaddr_storage()

    /// The numeric host, e.g. `127.0.0.1` or `::1`.
    public let host: String
    /// The port.
    public let port: Int

    /// Parses a numeric IPv4 or IPv6 host (`localhost` is taken as 127.0.0.1).
    /// Host names are not resolved here: that would block the loop.
    public init(host: String, port: Int) throws(UVError) {
        let numeric = host == "localhost" ? "127.0.0.1" : host
        self.host = numeric
        self.port = port
        guard (0...65535).contains(port) else { throw UVError(Int32(UV_EINVAL.rawValue)) }
        var storage = sockaddr_storage()
        let result: Int32 = withUnsafeMutableBytes(of: &storage) { raw in
            if numeric.contains(":") {
                return uv_ip6_addr(numeric, Int32(port), raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self))
            }
            return uv_ip4_addr(numeric, Int32(port), raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self))
        }
        try UVError.check(result)
        self.storage = storage
    }

    init(storage: sockaddr_storage) {
        self.storage = storage
        var name = [CChar](repeating: 0, count: 64)
        var port = 0
        withUnsafeBytes(of: storage) { raw in
            if Int32(storage.ss_family) == AF_INET6 {
                let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                uv_ip6_name(address, &name, name.count)
                port = Int(UInt16(bigEndian: address.pointee.sin6_port))
            } else {
                let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                uv_ip4_name(address, &name, name.count)
                port = Int(UInt16(bigEndian: address.pointee.sin_port))
            }
        }
        self.host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        self.port = port
    }

    /// True for 127.0.0.0/8, `::1` and `localhost`.
    public static func isLoopback(host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// True when `host` is a numeric IPv4 or IPv6 address (not a name).
    public static func isNumeric(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// `host:port`, with brackets around IPv6 hosts.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }

    static func read(_ getter: (UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<Int32>) -> Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutableBytes(of: &storage) { raw in
            getter(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
        return result == 0 ? SocketAddress(storage: storage) : nil
    }
}
