import Foundation
import OutaTimeProtocol
import UV

/// The WebSocket side of one ``LoadConnection``: the client's opening
/// handshake (a random key, no `Origin`, so the server's origin rule has
/// nothing to refuse), then masked text frames out and the server's
/// unmasked frames in, through the codec the server uses
/// (`OutaTimeProtocol/WebSocket`).
final class LoadWebSocket {
    /// What ``receive(_:onText:onPing:)`` made of a read.
    enum Outcome {
        /// Nothing more to do (still upgrading, or frames delivered).
        case fine
        /// The 101 arrived and checked out: the connection is ready.
        case upgraded
        /// The server answered with a Close frame, or broke the protocol.
        case failed(String)
    }

    /// The path upgraded (`--ws-path`).
    let path: String
    /// The `Host` field: the host the user named and the port connected to.
    let host: String
    private let key: String
    private var response: [UInt8] = []
    private var isOpen = false
    /// Server frames may carry up to 16 MiB (PROTOCOL.md §1).
    private var decoder = WebSocketDecoder(maxMessageBytes: 16 * 1024 * 1024, requireMasked: false)
    /// Mask keys: SplitMix64 seeded from the system, not a system call per
    /// frame. RFC 6455 wants unpredictable keys to protect proxies from a
    /// hostile page's script; a load harness sends its own frames to its own
    /// server, so only the masking cost matters here.
    private var maskState: UInt64

    /// The most response head bytes read before giving up.
    private static let maxResponseHead = 16 * 1024

    init(host: String, path: String) {
        self.host = host
        self.path = path
        var random = SystemRandomNumberGenerator()
        key = Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }).base64EncodedString()
        maskState = random.next()
    }

    /// The upgrade request (`GET <path>`, version 13, no `Origin`, no extension).
    var request: [UInt8] {
        Array(("GET \(path) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
            + "User-Agent: outatime-load/0.1\r\n\r\n").utf8)
    }

    /// One body as a masked text frame.
    func frame(_ body: [UInt8]) -> [UInt8] {
        WebSocketFrame.encode(opcode: .text, payload: body, mask: nextMask())
    }

    /// A masked frame of `opcode` (a Pong answering a Ping).
    func frame(_ opcode: WebSocketOpcode, _ payload: [UInt8]) -> [UInt8] {
        WebSocketFrame.encode(opcode: opcode, payload: payload, mask: nextMask())
    }

    /// Reads the 101 until it is complete, then frames: each text message
    /// to `onText` (valid only during the call), each Ping's payload to
    /// `onPing` (the caller answers with a Pong).
    func receive(_ bytes: UnsafeRawBufferPointer, onText: (UnsafeRawBufferPointer) -> Void,
                 onPing: ([UInt8]) -> Void) -> Outcome {
        if isOpen {
            return decode(bytes, onText: onText, onPing: onPing).map(Outcome.failed) ?? .fine
        }
        response.append(contentsOf: bytes)
        guard let end = Self.headEnd(response) else {
            return response.count > Self.maxResponseHead
                ? .failed("the upgrade answer has no end within \(Self.maxResponseHead) bytes") : .fine
        }
        if let problem = checkResponse(Array(response[..<end])) { return .failed(problem) }
        isOpen = true
        // Frames right behind the 101 in the same read (the server sends
        // none before `hello`, but nothing forbids it).
        let rest = Array(response[end...])
        response = []
        let failure = rest.withUnsafeBytes { decode($0, onText: onText, onPing: onPing) }
        return failure.map(Outcome.failed) ?? .upgraded
    }

    private func decode(_ bytes: UnsafeRawBufferPointer, onText: (UnsafeRawBufferPointer) -> Void,
                        onPing: ([UInt8]) -> Void) -> String? {
        var failure: String?
        decoder.feed(bytes, onText: onText) { event in
            switch event {
            case .ping(let payload): onPing(payload)
            case .close(let code, let reason):
                failure = "the server closed the WebSocket (code \(code.map(String.init) ?? "none")\(reason.isEmpty ? "" : ": \(reason)"))"
            case .failure(let problem):
                failure = "bad WebSocket frame from the server: close \(problem.code): \(problem.message)"
            case .pong, .text:
                break
            }
        }
        return failure
    }

    /// Why the head of the answer is not a good 101, or nil.
    private func checkResponse(_ head: [UInt8]) -> String? {
        let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
        let status = lines.first ?? ""
        guard status.hasPrefix("HTTP/1.1 101") else {
            // A refusal carries its reason in the body: show what arrived.
            let body = String(decoding: response.dropFirst(head.count).prefix(200), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return "the server refused the WebSocket upgrade of \(path): \(status)\(body.isEmpty ? "" : " (\(body))")"
        }
        let expected = WebSocketHandshake.accept(key: key, sha1: { SHA1.digest($0) })
        let accept = lines.dropFirst().first { $0.lowercased().hasPrefix("sec-websocket-accept:") }
            .map { $0.dropFirst("sec-websocket-accept:".count).trimmingCharacters(in: .whitespaces) }
        guard accept == expected else {
            return "the upgrade answer's Sec-WebSocket-Accept is \(accept ?? "missing"), expected \(expected)"
        }
        return nil
    }

    /// The offset after the CRLF CRLF ending a response head, or nil.
    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }

    private func nextMask() -> UInt32 {
        maskState &+= 0x9E37_79B9_7F4A_7C15
        var z = maskState
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return UInt32(truncatingIfNeeded: z ^ (z >> 31))
    }
}
