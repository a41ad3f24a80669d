import Foundation
import OutaTimeProtocol
import UV

/// A small WebSocket client for the server's `GET /ws`, over a real socket
/// (``TestClient`` underneath) and the codec of OutaTimeProtocol: it sends
/// masked frames (as RFC 6455 requires of clients) and decodes the
/// server's unmasked ones. Protocol helpers mirror ``TestClient``'s:
/// one text message is one frame body.
final class WebSocketTestClient: TestConversation {
    /// The raw socket (for bytes the codec would not send: unmasked frames, binary).
    let socket: TestClient
    private var decoder = WebSocketDecoder(maxMessageBytes: 64 << 20, requireMasked: false)
    var nextID = 1
    /// Messages received while waiting for something else, oldest first.
    var pushes: [[String: Any]] = []
    /// Every message received, oldest first.
    private(set) var transcript: [[String: Any]] = []
    /// Control frames and closes seen while reading messages.
    private(set) var controls: [WebSocketEvent] = []
    /// Bytes read off the socket after the handshake.
    private(set) var bytesRead = 0

    /// The status, fields and body of an HTTP answer to the upgrade request.
    struct HandshakeAnswer {
        var status: Int
        var fields: [String: String]
        var body: String
    }

    /// Connects to the HTTP listener and upgrades; throws with the answer
    /// when it is not `101`.
    convenience init(port: Int, host: String = "localhost", origin: String? = nil, path: String = "/ws",
                     source: String? = nil) throws {
        let (answer, socket) = try Self.handshake(port: port, host: host, origin: origin, path: path, source: source)
        guard answer.status == 101 else {
            throw TestClientError.failed("upgrade answered \(answer.status): \(answer.body)")
        }
        self.init(socket: socket)
    }

    init(socket: TestClient) {
        self.socket = socket
    }

    /// Sends an upgrade request and reads the answer's head (and body, when
    /// not `101`). The socket is returned for the frames that follow.
    static func handshake(port: Int, host: String = "localhost", origin: String? = nil, path: String = "/ws",
                          extra: String = "", source: String? = nil,
                          receiveBuffer: Int32? = nil) throws -> (HandshakeAnswer, TestClient) {
        let socket = try TestClient(port: port, receiveBuffer: receiveBuffer, source: source)
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        var request = "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        request += "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
        if let origin { request += "Origin: \(origin)\r\n" }
        request += extra + "\r\n"
        try socket.sendRaw(Array(request.utf8))
        let answer = try readAnswer(socket)
        if answer.status == 101 {
            let expected = WebSocketHandshake.accept(key: key, sha1: { SHA1.digest($0) })
            guard answer.fields["sec-websocket-accept"] == expected else {
                throw TestClientError.malformed("Sec-WebSocket-Accept \(answer.fields["sec-websocket-accept"] ?? "-"), expected \(expected)")
            }
        }
        return (answer, socket)
    }

    /// Reads an HTTP answer byte by byte up to the blank line (so no frame
    /// bytes after a `101` are consumed), then its body.
    private static func readAnswer(_ socket: TestClient) throws -> HandshakeAnswer {
        var head: [UInt8] = []
        while !(head.count >= 4 && head.suffix(4).elementsEqual("\r\n\r\n".utf8)) {
            let byte = try socket.readSome(max: 1)
            guard !byte.isEmpty else { throw TestClientError.closed("the upgrade answer; got \(String(decoding: head, as: UTF8.self))") }
            head += byte
            guard head.count < 16_384 else { throw TestClientError.malformed("an answer head over 16 KiB") }
        }
        let lines = String(decoding: head.dropLast(4), as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ")[1]) ?? -1
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            fields[parts[0].lowercased()] = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
        }
        var body: [UInt8] = []
        let length = status == 101 ? 0 : Int(fields["content-length"] ?? "0") ?? 0
        while body.count < length {
            let more = try socket.readSome(max: length - body.count)
            if more.isEmpty { break }
            body += more
        }
        return HandshakeAnswer(status: status, fields: fields, body: String(decoding: body, as: UTF8.self))
    }

    // MARK: Sending

    /// One masked frame (a random key), `fin` set unless a fragment follows.
    static func frame(_ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true, masked: Bool = true) -> [UInt8] {
        var bytes = WebSocketFrame.encode(opcode: opcode, payload: payload, mask: masked ? UInt32.random(in: 1...UInt32.max) : nil)
        if !fin { bytes[0] &= 0x7F }
        return bytes
    }

    /// Sends `text` as one masked text message.
    func sendText(_ text: String) throws {
        try socket.sendRaw(Self.frame(.text, Array(text.utf8)))
    }

    /// Sends `json` as one text message.
    func sendMessage(_ json: [String: Any]) throws {
        try socket.sendRaw(Self.frame(.text, Array(try JSONSerialization.data(withJSONObject: json))))
    }

    // MARK: Receiving

    /// The next WebSocket event (text, ping, pong, close, failure).
    func readEvent(timeout: Double = TestClient.defaultTimeout) throws -> WebSocketEvent {
        let deadline = Date().addingTimeInterval(timeout)
        for _ in 0..<100_000 {
            if let event = decoder.next() { return event }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { break }
            let bytes = try socket.readSome(timeout: remaining)
            guard !bytes.isEmpty else { throw TestClientError.closed("a WebSocket frame; seen: \(describe(transcript))") }
            bytesRead += bytes.count
            decoder.append(bytes)
        }
        throw TestClientError.timedOut("a WebSocket frame; seen: \(describe(transcript))")
    }

    /// The next text message as a JSON object; control frames go to ``controls``.
    func readMessage(timeout: Double = TestClient.defaultTimeout) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        for _ in 0..<TestClient.frameBudget {
            let event = try readEvent(timeout: max(deadline.timeIntervalSinceNow, 0.001))
            switch event {
            case .text(let body):
                guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
                    throw TestClientError.malformed(String(decoding: body, as: UTF8.self))
                }
                transcript.append(object)
                return object
            case .failure(let failure):
                throw TestClientError.malformed("\(failure) after \(describe(transcript))")
            case .close:
                controls.append(event)
                throw TestClientError.closed("a message: Close \(event) after \(describe(transcript))")
            default:
                controls.append(event)
            }
        }
        throw TestClientError.timedOut("a message")
    }

    /// `hello` (protocol 1); returns its result.
    @discardableResult
    func hello(name: String = "web", token: String? = nil) throws -> [String: Any] {
        try helloResult(name: name, token: token, client: "outatime-tests-ws")
    }

    /// Reads on past messages (kept in ``pushes``) and control frames to the
    /// server's Close; returns its code and reason.
    func readClose(timeout: Double = TestClient.defaultTimeout) throws -> (code: UInt16?, reason: String) {
        let deadline = Date().addingTimeInterval(timeout)
        for _ in 0..<TestClient.frameBudget {
            let event = try readEvent(timeout: max(deadline.timeIntervalSinceNow, 0.001))
            switch event {
            case .close(let code, let reason): return (code, reason)
            case .text(let body):
                if let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] {
                    transcript.append(object)
                    pushes.append(object)
                }
            case .failure(let failure): throw TestClientError.malformed("\(failure)")
            default: controls.append(event)
            }
        }
        throw TestClientError.timedOut("a Close frame; seen: \(describe(transcript))")
    }
}
