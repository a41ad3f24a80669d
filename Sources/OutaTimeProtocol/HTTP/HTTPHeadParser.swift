/// Reads HTTP/1.x request heads, strictly and within fixed bounds, for the
/// server's HTTP listener (`/metrics`, `/healthz`, `/readyz`).
///
/// **Why our own parser** (a deliberate deviation from "no hand-made
/// substitutes", written in the issue that asked for it): Debian has no
/// maintained C HTTP parser (`llhttp` is not packaged, `http-parser` is
/// archived upstream), and libmicrohttpd brings its own buffering and TLS
/// that cannot share the server's loop, write queues and TLS. What is
/// needed is small: request heads of `GET` and `HEAD` only, never a body.
///
/// What it accepts (RFC 9112, strictly):
/// - `METHOD SP origin-form SP HTTP/1.x CRLF`, then field lines
///   `name ":" OWS value OWS CRLF`, then an empty line; lines end in CRLF
///   (a bare CR or LF is refused); up to two empty lines before the request
///   line are skipped (a client's stray CRLF after a previous request);
/// - methods `GET` and `HEAD`; any other method token is `405`;
/// - versions `HTTP/1.0` and `HTTP/1.1`; another `HTTP/d.d` is `505`;
/// - an origin-form target (`/path?query`) of visible ASCII;
/// - field names that are tokens, with nothing between the name and the
///   colon; values of visible characters, spaces and tabs; no line folding;
/// - HTTP/1.1 needs exactly one `Host`; no `Transfer-Encoding` and no
///   `Content-Length` other than 0 (no bodies: nothing can be smuggled
///   behind a head).
/// Bounds: the head (empty lines, request line, fields and the final empty
/// line) is at most ``Limits/maxHeadBytes`` bytes and holds at most
/// ``Limits/maxHeaders`` fields, else `431`. Everything else is `400`. A
/// request line that cannot be HTTP (a byte outside a method token before
/// the first space) is refused as soon as it arrives, not after 8 KiB.
///
/// Incremental: give it everything received since the previous head ended;
/// it remembers how far it searched, so a head sent a byte at a time costs
/// O(head), not O(head²).
public struct HTTPHeadParser: Sendable {
    /// The bounds of a head.
    public struct Limits: Sendable, Equatable {
        /// Bytes of the whole head, the final empty line included.
        public var maxHeadBytes: Int
        /// Field lines.
        public var maxHeaders: Int

        public init(maxHeadBytes: Int = 8 * 1024, maxHeaders: Int = 64) {
            self.maxHeadBytes = maxHeadBytes
            self.maxHeaders = maxHeaders
        }
    }

    /// What the bytes so far amount to.
    public enum Outcome: Sendable, Equatable {
        /// No complete head yet, and nothing wrong so far.
        case needMore
        /// A head, `length` bytes long; the bytes after it are the next request's.
        case head(HTTPRequestHead, length: Int)
        /// Refused: answer with the status, then close.
        case refused(HTTPHeadError)
    }

    public let limits: Limits
    /// Bytes already searched for the end of the head.
    private var searched = 0
    /// How far ``findBareLineFeed(_:from:)`` has looked.
    private var bareLFSearched = 0

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Reads `bytes`, everything received since the previous head ended.
    public mutating func parse(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        let input = bytes.bindMemory(to: UInt8.self)
        let start = Self.skipEmptyLines(input)
        guard let end = findEnd(input, from: start) else {
            if input.count > limits.maxHeadBytes {
                return .refused(HTTPHeadError(.requestHeaderFieldsTooLarge,
                    "the request head is over \(limits.maxHeadBytes) bytes"))
            }
            if let error = Self.checkPartialRequestLine(input, from: start) { return .refused(error) }
            if let error = findBareLineFeed(input, from: start) { return .refused(error) }
            return .needMore
        }
        searched = 0
        bareLFSearched = 0
        guard end <= limits.maxHeadBytes else {
            return .refused(HTTPHeadError(.requestHeaderFieldsTooLarge,
                "the request head is \(end) bytes, over \(limits.maxHeadBytes)"))
        }
        // The lines from `start` to the final CRLF CRLF, without it.
        switch Self.readHead(UnsafeBufferPointer(rebasing: input[start..<(end - 4)]), limits: limits) {
        case .success(let head): return .head(head, length: end)
        case .failure(let error): return .refused(error)
        }
    }

    /// Forgets the search position (a new connection, or the caller threw
    /// the bytes away).
    public mutating func reset() {
        searched = 0
        bareLFSearched = 0
    }

    // MARK: Finding the head

    private static let cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")

    /// Skips at most two empty lines (CRLF) at the start.
    private static func skipEmptyLines(_ input: UnsafeBufferPointer<UInt8>) -> Int {
        var position = 0
        for _ in 0..<2 where position + 1 < input.count && input[position] == cr && input[position + 1] == lf {
            position += 2
        }
        return position
    }

    /// The offset just after the CRLF CRLF that ends the head, or nil.
    private mutating func findEnd(_ input: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var index = max(start, searched - 3)
        let limit = min(input.count, limits.maxHeadBytes + 1)
        while index + 3 < limit {
            if input[index + 3] == Self.lf && input[index + 2] == Self.cr
                && input[index + 1] == Self.lf && input[index] == Self.cr {
                return index + 4
            }
            index += 1
        }
        searched = max(searched, index)
        return nil
    }

    /// A line that ends in LF without CR, refused as soon as it arrives:
    /// such a head never ends in CRLF CRLF, and would wait for the hello
    /// timeout (and get `408`) instead of its `400`. Searched once per byte.
    private mutating func findBareLineFeed(_ input: UnsafeBufferPointer<UInt8>, from start: Int) -> HTTPHeadError? {
        var index = max(start, bareLFSearched)
        while index < input.count {
            if input[index] == Self.lf && (index == start || input[index - 1] != Self.cr) {
                return Self.bareLineFeed
            }
            index += 1
        }
        bareLFSearched = index
        return nil
    }

    static let bareLineFeed = HTTPHeadError(.badRequest, "a line of the request head ends in LF without CR")

    /// A request line still arriving: refused early if what came so far
    /// cannot start one (a byte outside a method token before the first
    /// space, or a space first).
    private static func checkPartialRequestLine(_ input: UnsafeBufferPointer<UInt8>, from start: Int) -> HTTPHeadError? {
        var index = start
        // A CR that may begin an empty line still arriving.
        if index == input.count - 1, input[index] == cr { return nil }
        while index < input.count, input[index] != UInt8(ascii: " ") {
            guard isTokenByte(input[index]) else {
                return HTTPHeadError(.badRequest, "the request does not start with an HTTP method (byte 0x\(hex(input[index])))")
            }
            index += 1
        }
        if index == start, index < input.count {
            return HTTPHeadError(.badRequest, "the request line starts with a space")
        }
        return nil
    }

    // MARK: Reading the head

    private static func readHead(_ head: UnsafeBufferPointer<UInt8>, limits: Limits) -> Result<HTTPRequestHead, HTTPHeadError> {
        var lines: [UnsafeBufferPointer<UInt8>] = []
        var lineStart = 0
        var index = 0
        while index < head.count {
            let byte = head[index]
            if byte == cr {
                guard index + 1 < head.count, head[index + 1] == lf else {
                    return .failure(HTTPHeadError(.badRequest, "a CR not followed by LF in the request head"))
                }
                lines.append(UnsafeBufferPointer(rebasing: head[lineStart..<index]))
                index += 2
                lineStart = index
                continue
            }
            if byte == lf {
                return .failure(bareLineFeed)
            }
            index += 1
        }
        lines.append(UnsafeBufferPointer(rebasing: head[lineStart..<head.count]))

        let requestLine: (method: HTTPRequestHead.Method, path: String, query: String?, version: HTTPRequestHead.Version)
        switch readRequestLine(lines[0]) {
        case .success(let line): requestLine = line
        case .failure(let error): return .failure(error)
        }
        let fieldLines = lines.dropFirst()
        guard fieldLines.count <= limits.maxHeaders else {
            return .failure(HTTPHeadError(.requestHeaderFieldsTooLarge,
                "the request has \(fieldLines.count) header fields, over \(limits.maxHeaders)"))
        }
        var fields: [HTTPRequestHead.Field] = []
        fields.reserveCapacity(fieldLines.count)
        for line in fieldLines {
            switch readField(line) {
            case .success(let field): fields.append(field)
            case .failure(let error): return .failure(error)
            }
        }
        let head = HTTPRequestHead(method: requestLine.method, path: requestLine.path, query: requestLine.query,
                                   version: requestLine.version, fields: fields)
        if let error = checkFraming(head) { return .failure(error) }
        return .success(head)
    }

    private static func readRequestLine(_ line: UnsafeBufferPointer<UInt8>)
        -> Result<(method: HTTPRequestHead.Method, path: String, query: String?, version: HTTPRequestHead.Version), HTTPHeadError> {
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else {
            return .failure(HTTPHeadError(.badRequest,
                "the request line is not 'METHOD TARGET HTTP/1.1' (three parts, one space apart)"))
        }
        let (methodBytes, target, versionBytes) = (parts[0], parts[1], parts[2])
        guard methodBytes.allSatisfy(isTokenByte) else {
            return .failure(HTTPHeadError(.badRequest, "the method is not a token"))
        }
        let versionText = String(decoding: versionBytes, as: UTF8.self)
        guard let version = HTTPRequestHead.Version(rawValue: versionText) else {
            let shape = Array(versionBytes)
            if shape.count == 8, versionText.hasPrefix("HTTP/"), shape[6] == UInt8(ascii: "."),
               isDigit(shape[5]), isDigit(shape[7]) {
                return .failure(HTTPHeadError(.httpVersionNotSupported, "\(versionText) is not served; use HTTP/1.1 or HTTP/1.0"))
            }
            return .failure(HTTPHeadError(.badRequest, "the version is not HTTP/1.1 or HTTP/1.0"))
        }
        let methodText = String(decoding: methodBytes, as: UTF8.self)
        guard let method = HTTPRequestHead.Method(rawValue: methodText) else {
            return .failure(HTTPHeadError(.methodNotAllowed,
                "method \(methodText.prefix(16)) is not served; allowed: GET, HEAD"))
        }
        guard target.first == UInt8(ascii: "/") else {
            return .failure(HTTPHeadError(.badRequest, "the target must be a path starting with '/'"))
        }
        guard target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(HTTPHeadError(.badRequest, "the target holds a byte outside visible ASCII"))
        }
        let text = String(decoding: target, as: UTF8.self)
        if let mark = text.firstIndex(of: "?") {
            return .success((method, String(text[..<mark]), String(text[text.index(after: mark)...]), version))
        }
        return .success((method, text, nil, version))
    }

    private static func readField(_ line: UnsafeBufferPointer<UInt8>) -> Result<HTTPRequestHead.Field, HTTPHeadError> {
        guard let first = line.first else {
            return .failure(HTTPHeadError(.badRequest, "an empty header line"))
        }
        if first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
            return .failure(HTTPHeadError(.badRequest, "a header line starts with whitespace (line folding is not accepted)"))
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            return .failure(HTTPHeadError(.badRequest, "a header line has no ':'"))
        }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
            return .failure(HTTPHeadError(.badRequest,
                "a header name is empty or not a token (nothing may stand between the name and ':')"))
        }
        var value = line[(colon + 1)...]
        while let byte = value.first, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { value = value.dropFirst() }
        while let byte = value.last, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { value = value.dropLast() }
        guard value.allSatisfy({ $0 == UInt8(ascii: "\t") || ($0 >= 0x20 && $0 != 0x7F) }) else {
            return .failure(HTTPHeadError(.badRequest,
                "the value of header \(String(decoding: name, as: UTF8.self).prefix(40)) holds a control character"))
        }
        return .success(HTTPRequestHead.Field(name: String(decoding: name, as: UTF8.self).lowercased(),
                                              value: String(decoding: value, as: UTF8.self)))
    }

    /// No body may follow, and HTTP/1.1 names its host once.
    private static func checkFraming(_ head: HTTPRequestHead) -> HTTPHeadError? {
        if head.fields.contains(where: { $0.name == "transfer-encoding" }) {
            return HTTPHeadError(.badRequest, "Transfer-Encoding is not accepted: requests have no body")
        }
        for field in head.fields where field.name == "content-length" && field.value != "0" {
            return HTTPHeadError(.badRequest, "Content-Length \(field.value.prefix(20)) is not accepted: requests have no body")
        }
        if head.version == .http11 {
            let hosts = head.fields.filter { $0.name == "host" }.count
            if hosts != 1 {
                return HTTPHeadError(.badRequest, "an HTTP/1.1 request needs exactly one Host header, got \(hosts)")
            }
        }
        return nil
    }

    // MARK: Characters

    /// `tchar` of RFC 9110: letters, digits and ``!#$%&'*+-.^_`|~``.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 15)]], as: UTF8.self)
    }
}
