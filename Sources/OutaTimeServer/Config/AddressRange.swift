#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 network in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`,
/// or one address: `192.0.2.7` is `/32`, `::1` is `/128`): a `--proxy-from`
/// value, the balancers whose PROXY headers the server trusts.
public struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    /// The network's address bytes (4 or 16), host bits cleared.
    let network: [UInt8]
    /// Leading bits that must match.
    let prefixLength: Int

    /// Parses `text`; the error names the value and what is allowed.
    public init(_ text: String) throws(ConfigError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let bad = "--proxy-from '\(text)' is not an address or network in CIDR notation "
            + "(e.g. 10.0.0.5, 10.0.0.0/8, 2001:db8::/32)"
        guard let address = parts.first, let bytes = Self.bytes(of: String(address)) else { throw ConfigError(message: bad) }
        let maxLength = bytes.count * 8
        var length = maxLength
        if parts.count == 2 {
            let digits = parts[1]
            guard (1...3).contains(digits.count), digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
                  let value = Int(digits), value <= maxLength else {
                throw ConfigError(message: "--proxy-from '\(text)': the prefix length must be 0…\(maxLength)")
            }
            length = value
        }
        prefixLength = length
        network = Self.masked(bytes, to: length)
    }

    /// Whether the numeric address `host` (as the server's sockets report it)
    /// lies in the range. An IPv4-mapped IPv6 address (`::ffff:10.0.0.5`, a
    /// dual-stack listener's view of an IPv4 peer) counts as its IPv4 address.
    public func contains(_ host: String) -> Bool {
        guard var bytes = Self.bytes(of: host) else { return false }
        if bytes.count == 16, network.count == 4, bytes.prefix(12).elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]) {
            bytes = Array(bytes.suffix(4))
        }
        return bytes.count == network.count && Self.masked(bytes, to: prefixLength) == network
    }

    public var description: String {
        var text = [CChar](repeating: 0, count: 64)
        let family = network.count == 4 ? AF_INET : AF_INET6
        guard inet_ntop(family, network, &text, socklen_t(text.count)) != nil else { return "?" }
        return String(cString: text) + "/\(prefixLength)"
    }

    private static func bytes(of text: String) -> [UInt8]? {
        var raw = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET, text, &raw) == 1 { return Array(raw.prefix(4)) }
        if inet_pton(AF_INET6, text, &raw) == 1 { return raw }
        return nil
    }

    private static func masked(_ bytes: [UInt8], to length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bits = min(8, max(0, length - index * 8))
            return bits == 8 ? byte : byte & ~(0xFF >> UInt8(bits))
        }
    }
}

extension [AddressRange] {
    /// Whether any range holds `host`.
    func anyContains(_ host: String) -> Bool { contains { $0.contains(host) } }
}
