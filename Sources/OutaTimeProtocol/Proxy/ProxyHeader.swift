#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The PROXY protocol header a load balancer (haproxy `send-proxy`,
/// `send-proxy-v2`) writes before a connection's first byte, naming the
/// client it relays (https://www.haproxy.org/download/2.6/doc/proxy-protocol.txt).
///
/// ``parse(_:)`` is pure (no I/O): it takes the bytes received so far and
/// says whether they hold a whole header, need more, or cannot be one.
/// Addresses come back in the form the server's sockets report them
/// (`inet_ntop`: `192.0.2.1`, `2001:db8::1`), so a client counts as the
/// same address whether it connects directly or through the balancer.
///
/// Accepted: version 1 (`PROXY TCP4|TCP6 SRC DST SPORT DPORT\r\n`, or
/// `PROXY UNKNOWN…\r\n`, at most 107 bytes) and version 2 (the 12-byte
/// signature, version 2, command LOCAL or PROXY, family UNSPEC, INET,
/// INET6 or UNIX over STREAM, addresses, TLVs skipped). LOCAL (a
/// balancer's own health check), UNKNOWN, UNSPEC and UNIX mean "use the
/// connection's own address". Anything else is refused with a reason.
public enum ProxyHeader: Equatable, Sendable {
    /// The header names the client: its numeric address and port.
    case client(host: String, port: Int)
    /// The header names no client (v1 `UNKNOWN`, v2 `LOCAL`, `UNSPEC`,
    /// `UNIX`): the connection's own address stands.
    case connectionAddress

    /// What ``parse(_:)`` found in the bytes so far.
    public enum Parse: Equatable, Sendable {
        /// A whole header of `length` bytes (the connection's data follows).
        case header(ProxyHeader, length: Int)
        /// A valid start; more bytes are needed.
        case incomplete
        /// Not a valid header: why, naming the bad value.
        case invalid(String)
    }

    /// The longest version 1 header, CRLF included.
    public static let maxVersion1Length = 107
    /// The version 2 signature.
    public static let version2Signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
    /// The longest version 2 header: 16 bytes, then up to 65,535.
    public static let maxVersion2Length = 16 + 65_535
    private static let version1Prefix = Array("PROXY ".utf8)

    /// Whether `first` can begin a header (`P` of v1, CR of v2's
    /// signature). Neither can begin a frame (a length of 0x50…… or
    /// 0x0D…… bytes is above any frame limit) nor a TLS record (0x16).
    public static func mayBegin(with first: UInt8) -> Bool {
        first == version1Prefix[0] || first == version2Signature[0]
    }

    /// Parses the header at the start of `bytes`.
    /// O(1) while a version 2 header is incomplete and O(107) for version 1,
    /// so a caller may parse again after each read.
    public static func parse(_ bytes: [UInt8]) -> Parse {
        guard let first = bytes.first else { return .incomplete }
        if first == version1Prefix[0] { return parseVersion1(bytes) }
        if first == version2Signature[0] { return parseVersion2(bytes) }
        return .invalid("the connection does not begin with a PROXY header (first byte 0x\(hex(first)))")
    }

    // MARK: Version 1

    private static func parseVersion1(_ bytes: [UInt8]) -> Parse {
        let checked = min(bytes.count, version1Prefix.count)
        guard bytes.prefix(checked).elementsEqual(version1Prefix.prefix(checked)) else {
            return .invalid("a PROXY v1 header begins with 'PROXY ', got '\(printable(bytes.prefix(checked)))'")
        }
        let window = bytes.prefix(maxVersion1Length)
        // The first CR or LF ends the line: an LF first is a bare LF, whatever follows.
        guard let cr = window.firstIndex(where: { $0 == 0x0D || $0 == 0x0A }) else {
            return bytes.count >= maxVersion1Length
                ? .invalid("the PROXY v1 line has no CRLF within \(maxVersion1Length) bytes") : .incomplete
        }
        guard bytes[cr] == 0x0D else {
            return .invalid("the PROXY v1 line ends in a bare LF at byte \(cr + 1) (CRLF needed)")
        }
        guard cr + 2 <= maxVersion1Length else {
            return .invalid("the PROXY v1 line has no CRLF within \(maxVersion1Length) bytes")
        }
        guard cr + 1 < bytes.count else { return .incomplete }
        guard bytes[cr + 1] == 0x0A else { return .invalid("the PROXY v1 line has a bare CR at byte \(cr + 1)") }
        let line = bytes[..<cr]
        let length = cr + 2
        guard line.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            return .invalid("the PROXY v1 line holds a control or non-ASCII byte")
        }
        let fields = line.split(separator: 0x20, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        let text = printable(line)
        guard fields.count >= 2 else { return .invalid("the PROXY v1 line '\(text)' names no protocol") }
        if fields[1] == "UNKNOWN" { return .header(.connectionAddress, length: length) }
        let family: Int32
        switch fields[1] {
        case "TCP4": family = AF_INET
        case "TCP6": family = AF_INET6
        default: return .invalid("the PROXY v1 line '\(text)' names protocol '\(fields[1])' (TCP4, TCP6 or UNKNOWN)")
        }
        guard fields.count == 6 else {
            return .invalid("the PROXY v1 line '\(text)' has \(fields.count) fields (6: PROXY \(fields[1]) SRC DST SPORT DPORT)")
        }
        guard let source = canonical(fields[2], family: family), canonical(fields[3], family: family) != nil else {
            return .invalid("the PROXY v1 line '\(text)' has an address that is not \(fields[1] == "TCP4" ? "IPv4" : "IPv6")")
        }
        guard let port = port(fields[4]), self.port(fields[5]) != nil else {
            return .invalid("the PROXY v1 line '\(text)' has a port that is not 0…65535")
        }
        return .header(.client(host: source, port: port), length: length)
    }

    private static func port(_ text: String) -> Int? {
        guard (1...5).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              text == "0" || !text.hasPrefix("0"), let value = Int(text), value <= 65_535 else { return nil }
        return value
    }

    // MARK: Version 2

    private static func parseVersion2(_ bytes: [UInt8]) -> Parse {
        let checked = min(bytes.count, version2Signature.count)
        guard bytes.prefix(checked).elementsEqual(version2Signature.prefix(checked)) else {
            return .invalid("the bytes begin like a PROXY v2 signature but differ from it")
        }
        guard bytes.count >= 16 else { return .incomplete }
        let versionCommand = bytes[12], familyProtocol = bytes[13]
        guard versionCommand >> 4 == 2 else { return .invalid("PROXY v2 header of version \(versionCommand >> 4) (2 needed)") }
        let command = versionCommand & 0x0F
        guard command <= 1 else { return .invalid("PROXY v2 header with command \(command) (0 LOCAL or 1 PROXY)") }
        let bodyLength = Int(bytes[14]) << 8 | Int(bytes[15])
        let length = 16 + bodyLength
        guard bytes.count >= length else { return .incomplete }
        if command == 0 { return .header(.connectionAddress, length: length) }  // LOCAL: addresses ignored
        let family = familyProtocol >> 4, transport = familyProtocol & 0x0F
        let body = Array(bytes[16..<length])
        switch family {
        case 0: return .header(.connectionAddress, length: length)
        case 1, 2:
            guard transport == 1 else {
                return .invalid("PROXY v2 header for transport \(transport) (1 STREAM needed: this is TCP)")
            }
            let size = family == 1 ? 4 : 16
            guard body.count >= 2 * size + 4 else {
                return .invalid("PROXY v2 \(family == 1 ? "INET" : "INET6") header of \(body.count) address bytes (\(2 * size + 4) needed)")
            }
            guard let host = format(Array(body[0..<size]), family: family == 1 ? AF_INET : AF_INET6) else {
                return .invalid("PROXY v2 header with an unreadable source address")
            }
            let port = Int(body[2 * size]) << 8 | Int(body[2 * size + 1])
            return .header(.client(host: host, port: port), length: length)
        case 3: return .header(.connectionAddress, length: length)
        default: return .invalid("PROXY v2 header of address family \(family) (0…3)")
        }
    }

    // MARK: Addresses

    /// `text` in `inet_ntop`'s form, if it is a numeric address of `family`.
    static func canonical(_ text: String, family: Int32) -> String? {
        var raw = [UInt8](repeating: 0, count: 16)
        guard inet_pton(family, text, &raw) == 1 else { return nil }
        return format(Array(raw.prefix(family == AF_INET ? 4 : 16)), family: family)
    }

    /// The address `raw` (network order) in `inet_ntop`'s form.
    static func format(_ raw: [UInt8], family: Int32) -> String? {
        var text = [CChar](repeating: 0, count: 64)
        guard inet_ntop(family, raw, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return "\(digits[Int(byte >> 4)])\(digits[Int(byte & 0x0F)])"
    }

    private static func printable(_ bytes: some Collection<UInt8>) -> String {
        String(bytes.prefix(120).map { (0x20...0x7E).contains($0) ? Character(UnicodeScalar($0)) : "?" })
    }
}
