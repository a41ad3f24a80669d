import OutaTimeProtocol

/// The HTTP head parser (issue 14's listener): any bytes, in any chunks.
///
/// Input: one byte `k` (0–7) and `k` chunk sizes (0–255), then the bytes.
/// Fed in chunks of those sizes (cycled) to one parser, as a connection
/// receives them, the outcome must be the one a fresh parser gives the
/// whole input: the same head and length, or the same refusal (a chunked
/// feed may refuse earlier, on the partial request line, but then the
/// whole input is refused too). A head's length is within the input and
/// the bound; a head written back (method, target, version, fields) reads
/// back as the same head.
enum HTTPChecks {
    static let limits = HTTPHeadParser.Limits(maxHeadBytes: 1024, maxHeaders: 16)

    static func check(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
        var reader = FuzzBytes(input)
        let chunkCount = Int(reader.byte() % 8)
        let chunks = (0..<chunkCount).map { _ in Int(reader.byte()) }
        let stream = Array(input[min(reader.offset, input.count)...])

        var whole = HTTPHeadParser(limits: limits)
        let expected = stream.withUnsafeBytes { whole.parse($0) }

        var fed = HTTPHeadParser(limits: limits)
        var received: [UInt8] = []
        var outcome = HTTPHeadParser.Outcome.needMore
        var offset = 0
        var turn = 0
        while offset < stream.count {
            let size = chunks.isEmpty ? stream.count : max(1, chunks[turn % chunks.count])
            turn += 1
            received += stream[offset..<min(stream.count, offset + size)]
            offset = min(stream.count, offset + size)
            outcome = received.withUnsafeBytes { fed.parse($0) }
            if outcome != .needMore { break }
        }
        switch (outcome, expected) {
        case (.refused, .refused), (.needMore, .needMore):
            break
        case (.head(let head, let length), .head(let expectedHead, let expectedLength)):
            guard head == expectedHead, length == expectedLength else {
                throw FuzzFailure(.http, "fed in chunks: \(head) (\(length)), whole: \(expectedHead) (\(expectedLength))")
            }
            guard length <= stream.count, length <= limits.maxHeadBytes else {
                throw FuzzFailure(.http, "a head of \(length) bytes from \(stream.count), bound \(limits.maxHeadBytes)")
            }
            try roundTrip(head)
        default:
            throw FuzzFailure(.http, "fed in chunks: \(outcome); whole: \(expected)")
        }
    }

    /// The head written back reads back the same.
    static func roundTrip(_ head: HTTPRequestHead) throws(FuzzFailure) {
        var text = "\(head.method.rawValue) \(head.path)\(head.query.map { "?" + $0 } ?? "") \(head.version.rawValue)\r\n"
        for field in head.fields { text += "\(field.name): \(field.value)\r\n" }
        text += "\r\n"
        var parser = HTTPHeadParser(limits: HTTPHeadParser.Limits(maxHeadBytes: 64 * 1024, maxHeaders: 1024))
        let again = Array(text.utf8).withUnsafeBytes { parser.parse($0) }
        guard case .head(let reread, _) = again, reread == head else {
            throw FuzzFailure(.http, "written back as \(text.debugDescription), read as \(again)")
        }
    }
}
