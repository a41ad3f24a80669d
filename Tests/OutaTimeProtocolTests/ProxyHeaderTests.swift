import OutaTimeProtocol
import Testing

/// `ProxyHeader.parse` on byte vectors: haproxy's v1 lines and v2 headers,
/// split anywhere, and malformed ones refused with a reason.
@Suite("PROXY header")
struct ProxyHeaderTests {
    static let signature = ProxyHeader.version2Signature

    /// A v2 header: command, family/transport byte, address bytes, TLVs.
    static func v2(command: UInt8 = 0x21, family: UInt8 = 0x11, body: [UInt8]) -> [UInt8] {
        signature + [command, family, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    static let inet: [UInt8] = [203, 0, 113, 7, 127, 0, 0, 1, 0xC3, 0x50, 0x07, 0xC1]  // :50000 → :1985

    @Test("v1 TCP4, TCP6 and UNKNOWN; the length excludes what follows")
    func version1() {
        let line = Array("PROXY TCP4 203.0.113.7 127.0.0.1 50000 1985\r\n".utf8)
        #expect(ProxyHeader.parse(line + [0, 0, 0, 9]) == .header(.client(host: "203.0.113.7", port: 50000), length: line.count))
        // IPv6 comes back in inet_ntop's form (as a socket reports it).
        let six = Array("PROXY TCP6 2001:DB8:0:0::1 ::1 65535 1985\r\n".utf8)
        #expect(ProxyHeader.parse(six) == .header(.client(host: "2001:db8::1", port: 65535), length: six.count))
        let unknown = Array("PROXY UNKNOWN ffff::1 ::1 1 2\r\n".utf8)
        #expect(ProxyHeader.parse(unknown) == .header(.connectionAddress, length: unknown.count))
        #expect(ProxyHeader.parse(Array("PROXY UNKNOWN\r\n".utf8)) == .header(.connectionAddress, length: 15))
    }

    @Test("every prefix of a valid header is incomplete, never invalid")
    func prefixes() {
        let headers = [Array("PROXY TCP4 203.0.113.7 127.0.0.1 50000 1985\r\n".utf8),
                       Self.v2(body: Self.inet + [0x04, 0x00, 0x01, 0x2A])]
        for header in headers {
            for cut in 0..<header.count {
                #expect(ProxyHeader.parse(Array(header.prefix(cut))) == .incomplete, "cut at \(cut)")
            }
        }
    }

    @Test("v2 PROXY over INET and INET6, TLVs skipped; LOCAL and UNSPEC keep the connection's address")
    func version2() {
        let tlvs: [UInt8] = [0x04, 0x00, 0x01, 0x2A, 0x20, 0x00, 0x00]
        let header = Self.v2(body: Self.inet + tlvs)
        #expect(ProxyHeader.parse(header + [0x16, 0x03]) == .header(.client(host: "203.0.113.7", port: 50000), length: header.count))
        var six = [UInt8](repeating: 0, count: 36)
        six[0] = 0x20; six[1] = 0x01; six[2] = 0x0D; six[3] = 0xB8; six[15] = 0x05
        six[32] = 0x00; six[33] = 0x50
        let v6 = Self.v2(family: 0x21, body: six)
        #expect(ProxyHeader.parse(v6) == .header(.client(host: "2001:db8::5", port: 80), length: v6.count))
        let local = Self.v2(command: 0x20, family: 0x00, body: [])
        #expect(ProxyHeader.parse(local) == .header(.connectionAddress, length: 16))
        let unspec = Self.v2(family: 0x00, body: [1, 2, 3])
        #expect(ProxyHeader.parse(unspec) == .header(.connectionAddress, length: 19))
    }

    @Test("malformed headers are refused with a reason naming the problem", arguments: [
        ("PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n", "protocol 'TCP5'"),
        ("PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", "5 fields"),
        ("PROXY TCP4 1.2.3.999 5.6.7.8 1 2\r\n", "not IPv4"),
        ("PROXY TCP4 ::1 5.6.7.8 1 2\r\n", "not IPv4"),
        ("PROXY TCP6 1.2.3.4 ::1 1 2\r\n", "not IPv6"),
        ("PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n", "port"),
        ("PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n", "port"),
        ("PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n", "fields"),
        ("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", "bare LF"),
        ("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX", "bare CR"),
        ("PROXY TCP4 1.2.3.4\n 5.6.7.8 1 2\r", "bare LF"),  // found by the fuzzer: was "incomplete"
        ("PROXZ TCP4", "begins with 'PROXY '"),
        ("GET / HTTP/1.1\r\n", "does not begin with a PROXY header"),
    ])
    func malformedVersion1(text: String, reason: String) {
        guard case .invalid(let message) = ProxyHeader.parse(Array(text.utf8)) else {
            Issue.record("accepted \(text.debugDescription)")
            return
        }
        #expect(message.contains(reason), "\(message)")
    }

    @Test("a v1 line without CRLF within 107 bytes is refused, not waited for")
    func overlongVersion1() {
        let long = Array(("PROXY TCP4 " + String(repeating: "1", count: 120)).utf8)
        #expect(ProxyHeader.parse(Array(long.prefix(106))) == .incomplete)
        guard case .invalid(let message) = ProxyHeader.parse(Array(long.prefix(107))) else {
            Issue.record("waited past 107 bytes")
            return
        }
        #expect(message.contains("107"))
        // A CRLF that would end at byte 108 is past the bound, whatever follows.
        let late = Array(("PROXY TCP4 " + String(repeating: "1", count: 95) + "\r\n").utf8)
        #expect(late.count == 108)
        guard case .invalid = ProxyHeader.parse(late), case .invalid = ProxyHeader.parse(Array(late.prefix(107))) else {
            Issue.record("accepted a 108-byte v1 line")
            return
        }
    }

    @Test("malformed v2 headers are refused")
    func malformedVersion2() {
        func reason(_ bytes: [UInt8]) -> String? {
            if case .invalid(let message) = ProxyHeader.parse(bytes) { return message }
            return nil
        }
        #expect(reason(Self.v2(command: 0x11, body: Self.inet))?.contains("version 1") == true)
        #expect(reason(Self.v2(command: 0x22, body: Self.inet))?.contains("command 2") == true)
        #expect(reason(Self.v2(family: 0x12, body: Self.inet))?.contains("transport 2") == true)
        #expect(reason(Self.v2(family: 0x11, body: Array(Self.inet.prefix(8))))?.contains("8 address bytes") == true)
        #expect(reason(Self.v2(family: 0x41, body: Self.inet))?.contains("family 4") == true)
        var wrong = Self.v2(body: Self.inet)
        wrong[7] = 0x50
        #expect(reason(wrong)?.contains("signature") == true)
        // A declared length not yet received waits (bounded by the 16-bit length).
        #expect(ProxyHeader.parse(Self.signature + [0x21, 0x11, 0xFF, 0xFF] + Self.inet) == .incomplete)
    }

    @Test("only P and CR may begin a header; a frame or TLS record never does")
    func firstByte() {
        #expect(ProxyHeader.mayBegin(with: UInt8(ascii: "P")))
        #expect(ProxyHeader.mayBegin(with: 0x0D))
        #expect(!ProxyHeader.mayBegin(with: 0x16))
        #expect(!ProxyHeader.mayBegin(with: 0x00))
    }
}
