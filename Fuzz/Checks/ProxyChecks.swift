import OutaTimeProtocol

/// The PROXY header parser (`--proxy-from`): any bytes, in any chunks.
///
/// Input: one byte `k` (0–7) and `k` chunk sizes (0–255), then the bytes.
/// Parsed again after each chunk, as the server does while a header
/// arrives, the first outcome other than "incomplete" must be the one the
/// whole input gives (an earlier chunk may be refused only if the whole is
/// refused too); a header's length is within the input and the bounds
/// (107 bytes for v1, 16 + 65,535 for v2), and a client address read back
/// through `inet_pton` is the same address.
enum ProxyChecks {
    static func check(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
        var reader = FuzzBytes(input)
        let chunkCount = Int(reader.byte() % 8)
        let chunks = (0..<chunkCount).map { _ in Int(reader.byte()) }
        let stream = Array(input[min(reader.offset, input.count)...])
        let expected = ProxyHeader.parse(stream)

        var received: [UInt8] = []
        var outcome = ProxyHeader.Parse.incomplete
        var offset = 0
        var turn = 0
        while offset < stream.count {
            let size = chunks.isEmpty ? stream.count : max(1, chunks[turn % chunks.count])
            turn += 1
            received += stream[offset..<min(stream.count, offset + size)]
            offset = min(stream.count, offset + size)
            outcome = ProxyHeader.parse(received)
            if outcome != .incomplete { break }
        }
        switch (outcome, expected) {
        case (.incomplete, .incomplete), (.invalid, .invalid):
            break
        case (.header(let header, let length), .header(let expectedHeader, let expectedLength)):
            guard header == expectedHeader, length == expectedLength else {
                throw FuzzFailure(.proxy, "fed in chunks: \(header) (\(length)), whole: \(expectedHeader) (\(expectedLength))")
            }
            let bound = stream.first == UInt8(ascii: "P") ? ProxyHeader.maxVersion1Length : ProxyHeader.maxVersion2Length
            guard length <= stream.count, length <= bound else {
                throw FuzzFailure(.proxy, "a header of \(length) bytes from \(stream.count), bound \(bound)")
            }
            if case .client(let host, let port) = header {
                guard (0...65_535).contains(port), reparses(host, port) else {
                    throw FuzzFailure(.proxy, "client \(host):\(port) does not read back")
                }
            }
        default:
            throw FuzzFailure(.proxy, "fed in chunks: \(outcome); whole: \(expected)")
        }
    }

    /// Whether `host` and `port`, written as a v1 line, parse back to themselves.
    private static func reparses(_ host: String, _ port: Int) -> Bool {
        let line = Array("PROXY \(host.contains(":") ? "TCP6" : "TCP4") \(host) \(host) \(port) 1\r\n".utf8)
        return ProxyHeader.parse(line) == .header(.client(host: host, port: port), length: line.count)
    }
}
