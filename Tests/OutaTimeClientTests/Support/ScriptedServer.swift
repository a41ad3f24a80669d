import Foundation
import OutaTimeProtocol
import UV

/// A fake server on the test's own loop that answers as a test scripts it,
/// for what the real server never does on purpose: skip a seq, stop
/// answering pings, refuse `hello`.
///
/// Every request it receives is recorded in ``requests``; ``onRequest``
/// decides the answer (``reply(_:to:on:)``, ``push(_:on:)``, or nothing).
final class ScriptedServer {
    /// One accepted connection.
    final class Peer {
        let stream: TCPStream
        var decoder = FrameDecoder(maxFrame: 1 << 20)
        var requests: [[String: JSONValue]] = []
        init(stream: TCPStream) { self.stream = stream }
    }

    private let listener: TCPListener
    let port: Int
    private(set) var peers: [Peer] = []
    /// Every request of every connection, in arrival order.
    private(set) var requests: [[String: JSONValue]] = []
    /// Called for each request; the default answers `hello` and `ping`.
    var onRequest: (Peer, [String: JSONValue]) -> Void = { _, _ in }
    private let encoder = MessageEncoder()
    private let serverEncoder = ReusableMessageEncoder()

    init(loop: Loop) throws {
        listener = TCPListener(loop: loop)
        try listener.bind(SocketAddress(host: "127.0.0.1", port: 0))
        port = listener.localAddress!.port
        try listener.listen { [weak self] error in
            guard let self else { return }
            guard error == nil, let stream = try? listener.accept() else { return }
            let peer = Peer(stream: stream)
            peers.append(peer)
            try? stream.startReading(onData: { [weak self] bytes in
                guard let self else { return }
                try? peer.decoder.feed(bytes) { body in
                    guard let request = try? JSONDecoder().decode(JSONValue.self, from: Data(body)),
                          case .object(let fields) = request else { return }
                    peer.requests.append(fields)
                    requests.append(fields)
                    onRequest(peer, fields)
                }
            }, onEnd: { _ in stream.close() })
        }
    }

    /// Answers every `hello` with `result`, then runs `then` on that
    /// connection (what the script sends once the client is ready).
    func answerHello(_ result: JSONValue = ScriptedServer.helloResult(), then: @escaping (Peer) -> Void) {
        onRequest = { [unowned self] peer, request in
            guard request["type"] == .string("hello") else { return }
            reply(result, to: request, on: peer)
            then(peer)
        }
    }

    /// The requests of `type`, in order.
    func requests(_ type: String) -> [[String: JSONValue]] {
        requests.filter { $0["type"] == .string(type) }
    }

    /// Sends `{"type":"reply","id":…,"ok":true,"result":result}`.
    func reply(_ result: JSONValue, to request: [String: JSONValue], on peer: Peer) {
        push(.object(["type": .string("reply"), "id": request["id"] ?? .null, "ok": .bool(true), "result": result]), on: peer)
    }

    /// Sends a failed reply with `code`.
    func fail(_ code: String, to request: [String: JSONValue], on peer: Peer) {
        let error: JSONValue = .object(["code": .string(code), "message": .string("scripted \(code)")])
        push(.object(["type": .string("reply"), "id": request["id"] ?? .null, "ok": .bool(false), "error": error]), on: peer)
    }

    /// Sends any frame.
    func push(_ frame: JSONValue, on peer: Peer) {
        pushRaw(Array(try! encoder.body(frame)), on: peer)
    }

    /// Sends `message` as the real server encodes it: with the encoder of
    /// its event loop, ``JSONWritable`` fast paths included.
    func send(_ message: some Encodable, on peer: Peer) {
        let frame = try! serverEncoder.frame(message)
        pushRaw(withExtendedLifetime(frame) { Array(frame.body) }, on: peer)
    }

    /// Sends `body` behind a length header, whatever it is.
    func pushRaw(_ body: [UInt8], on peer: Peer) {
        var header = UInt32(body.count).bigEndian
        var bytes = withUnsafeBytes(of: &header) { Array($0) }
        bytes.append(contentsOf: body)
        peer.stream.enqueue(OwnedBytes(bytes))
        peer.stream.flush()
    }

    /// A `hello` result with `heartbeatMs`.
    static func helloResult(heartbeatMs: Int = 15_000, session: String = "fake-1") -> JSONValue {
        .object(["server": .string("scripted/0"), "protocol": .int(1), "session": .string(session),
                 "heartbeat_ms": .int(Int64(heartbeatMs)), "max_frame": .int(65_536), "role": .string("operate")])
    }

    /// Closes the listener and every connection.
    func close() {
        listener.close()
        for peer in peers { peer.stream.close() }
    }
}
