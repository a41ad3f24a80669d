import OutaTimeProtocol
import UV

/// One connection to the HTTP listener: bytes in, request heads out
/// (``HTTPHeadParser``), one response per head, in order. Requests have no
/// body; a connection keeps alive as HTTP/1.1 says, and is closed after a
/// refused head, at the head timeout with an incomplete head, at the hello
/// timeout idle between heads, and when the server stops. The server takes its heads one at a time
/// (``nextHead()``), so that pipelined heads wait while their answers are
/// not read (``Server/answerHTTP(_:)``). A `GET /ws` that is upgraded
/// hands the connection over (``handOver()``): its stream then belongs to a
/// protocol ``Connection`` (``Server/answerWebSocket(_:on:)``).
final class HTTPConnection {
    let serial: Int
    /// Plain TCP, or TLS with `--http-tls` (``ServerConfig/httpTLS``).
    let stream: SocketStream
    /// The client's IP address, its key in ``Server/httpAddresses`` (nil
    /// if the peer's address could not be read).
    let peerHost: String?
    /// Bytes received and not yet consumed by a head.
    private var buffer: [UInt8] = []
    private var parser = HTTPHeadParser()
    /// When the connection opened or its last answer was sent.
    private(set) var waitingSince: UInt64
    /// When the head being awaited started: the accept for the first head,
    /// the first byte of a later one; nil while a kept-alive connection
    /// waits idle between heads (``ServerConfig/httpHeadTimeoutMs``).
    private(set) var headStartedAt: UInt64?
    /// True once the connection is being closed: nothing more is read.
    private(set) var isClosing = false
    /// Loop time by which a connection closing after its last write is
    /// closed anyway (its peer does not read what is left).
    private(set) var closeDeadline: UInt64?
    /// Its complete heads wait for the next loop iteration (the
    /// per-iteration share of ``Server/answerHTTP(_:)``).
    var waitsForTurn = false

    init(serial: Int, stream: SocketStream, peerHost: String?, now: UInt64) {
        self.serial = serial
        self.stream = stream
        self.peerHost = peerHost
        waitingSince = now
        headStartedAt = now
    }

    /// Keeps `bytes` for ``nextHead()``.
    func receive(_ bytes: UnsafeRawBufferPointer, now: UInt64) {
        guard !isClosing else { return }
        if headStartedAt == nil, bytes.count > 0 { headStartedAt = now }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete head (consumed), `needMore` when none is complete
    /// yet, or the refusal of the next head (nothing after it is read).
    func nextHead() -> HTTPHeadParser.Outcome {
        guard !isClosing else { return .needMore }
        let outcome = buffer.withUnsafeBytes { parser.parse($0) }
        if case .head(_, let length) = outcome {
            buffer.removeFirst(length)
            parser.reset()
        }
        return outcome
    }

    /// A response was written; the next head's wait starts now.
    func answered(at now: UInt64) {
        waitingSince = now
        // A pipelined head already under way has its time from now.
        headStartedAt = buffer.isEmpty ? nil : now
    }

    /// The connection leaves the HTTP side (`GET /ws` upgraded it): nothing
    /// more is parsed here; returns the bytes that followed the head, the
    /// new owner's first input.
    func handOver() -> [UInt8] {
        isClosing = true
        stream.onDrained = nil
        defer { buffer = [] }
        return buffer
    }

    /// Whether part of a head has arrived (a slow head gets `408`).
    var hasPartialHead: Bool { !buffer.isEmpty }

    /// Queues `response` and sends it.
    func send(_ response: [UInt8]) {
        stream.enqueue(OwnedBytes(response))
        stream.flush()
    }

    /// Stops reading; closes once what is queued is written, or at
    /// `deadline` (``Server/sweepHTTP(now:)``) if it is not read by then.
    func closeAfterWriting(deadline: UInt64, _ onClosed: @escaping () -> Void) {
        guard !isClosing else { return }
        isClosing = true
        closeDeadline = deadline
        stream.stopReading()
        stream.shutdown { [stream] _ in stream.close(onClosed) }
    }

    /// Closes at once (the server stops, or the peer went away).
    func closeNow(_ onClosed: @escaping () -> Void) {
        isClosing = true
        stream.close(onClosed)
    }
}

/// The bytes of one HTTP/1.1 response.
struct HTTPResponse {
    var status: HTTPStatus
    var body: [UInt8]
    var contentType = "text/plain; charset=utf-8"
    /// `no-store` for the server's own answers (live figures); the board's
    /// files say `no-cache` (``Server/webResponse(_:)``).
    var cacheControl = "no-store"
    var extraFields: [(String, String)] = []
    /// False: the connection closes after this answer, whatever the request
    /// asked (the board's files: ``Server/webResponse(_:)``).
    var keepsAlive = true

    init(status: HTTPStatus, body: String, contentType: String = "text/plain; charset=utf-8") {
        self.init(status: status, bytes: Array(body.utf8), contentType: contentType)
    }

    init(status: HTTPStatus, bytes: [UInt8], contentType: String, cacheControl: String = "no-store") {
        self.status = status
        self.body = bytes
        self.contentType = contentType
        self.cacheControl = cacheControl
    }

    /// Status line, fields and (unless `headOnly`) the body.
    func bytes(keepAlive: Bool, headOnly: Bool) -> [UInt8] {
        var text = "HTTP/1.1 \(status.rawValue) \(status.reasonPhrase)\r\n"
        text += "Content-Type: \(contentType)\r\n"
        text += "Content-Length: \(body.count)\r\n"
        text += "Cache-Control: \(cacheControl)\r\n"
        for (name, value) in extraFields { text += "\(name): \(value)\r\n" }
        text += "Connection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
        return Array(text.utf8) + (headOnly ? [] : body)
    }
}
