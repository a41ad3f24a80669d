/// The checks on a payload's bytes: UTF-8 (text messages and Close reasons)
/// and the Close frame's code.
extension WebSocketDecoder {
    /// A UTF-8 error at a byte offset, from the standard library's validator.
    struct UTF8Problem: Error, CustomStringConvertible {
        var kind: String
        var offset: Int

        /// The same problem `base` bytes later in a larger buffer.
        func describe(offset base: Int) -> String { "\(kind) at byte \(offset + base)" }

        var description: String { describe(offset: 0) }
    }

    /// How many leading bytes of `bytes` are whole, valid UTF-8 characters.
    /// When not `final`, an incomplete character at the very end is not an
    /// error (its rest is in the next fragment); anything else invalid is.
    static func utf8Prefix(_ bytes: UnsafeRawBufferPointer, final: Bool) -> Result<Int, UTF8Problem> {
        // ASCII needs no more than this scan (the common case: JSON).
        if isASCII(bytes) { return .success(bytes.count) }
        do {
            _ = try UTF8Span(validating: bytes.assumingMemoryBound(to: UInt8.self).span)
            return .success(bytes.count)
        } catch {
            if !final, error.kind == .truncatedScalar, error.byteOffsets.upperBound == bytes.count {
                return .success(error.byteOffsets.lowerBound)
            }
            return .failure(UTF8Problem(kind: Self.name(error.kind), offset: error.byteOffsets.lowerBound))
        }
    }

    /// True when no byte has its top bit set; eight bytes at a time (every
    /// received text message is checked, and JSON is mostly ASCII).
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        var seen: UInt64 = 0
        while bytes.count - offset >= 8 {
            seen |= bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        while offset < bytes.count {
            seen |= UInt64(bytes[offset])
            offset += 1
        }
        return seen & 0x8080_8080_8080_8080 == 0
    }

    /// The problem with `bytes` as a whole UTF-8 text, or nil when valid.
    static func utf8Error(_ bytes: [UInt8], final: Bool) -> UTF8Problem? {
        bytes.withUnsafeBytes { raw in
            if case .failure(let problem) = utf8Prefix(raw, final: final) { return problem }
            return nil
        }
    }

    private static func name(_ kind: UTF8.ValidationError.Kind) -> String {
        switch kind {
        case .unexpectedContinuationByte: "an unexpected continuation byte"
        case .surrogateCodePointByte: "an encoded surrogate"
        case .invalidNonSurrogateCodePointByte: "a byte that starts no character"
        case .overlongEncodingByte: "an overlong encoding"
        case .truncatedScalar: "a truncated character"
        default: "an invalid byte"
        }
    }

    /// A Close payload: nothing, or a 2-byte code allowed on the wire and a
    /// UTF-8 reason (RFC 6455 §5.5.1, §7.4).
    static func readClose(_ payload: [UInt8]) -> Result<WebSocketEvent, WebSocketFailure> {
        if payload.isEmpty { return .success(.close(code: nil, reason: "")) }
        guard payload.count >= 2 else {
            return .failure(WebSocketFailure(.protocolError,
                "a close frame with a 1-byte payload; it holds nothing or a 2-byte code and a reason"))
        }
        let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
        guard WebSocketCloseCode(rawValue: code).isAllowedOnTheWire else {
            return .failure(WebSocketFailure(.protocolError,
                "close code \(code) is not allowed on the wire; allowed: 1000–1003, 1007–1014, 3000–4999"))
        }
        let reason = Array(payload[2...])
        if let problem = utf8Error(reason, final: true) {
            return .failure(WebSocketFailure(.invalidPayload, "the close reason is not UTF-8: \(problem)"))
        }
        return .success(.close(code: code, reason: String(decoding: reason, as: UTF8.self)))
    }
}
