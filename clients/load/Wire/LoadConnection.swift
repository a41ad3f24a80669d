import Foundation
import Synchronization
import OutaTimeProtocol
import UV

/// One framed client connection on a worker's loop: connects, reads frames
/// into `onFrame`, queues outbound bodies. Every failure (connect, read end,
/// write error, bad frame, refused upgrade) ends in `onFailure` once, then
/// the stream closes.
///
/// The transport is this type's business alone (``transport``): length
/// prefixes on the TCP port, or a WebSocket (``LoadWebSocket``) on the HTTP
/// listener; the scenarios see frame bodies either way.
final class LoadConnection {
    /// The transport of every connection of the run (`--transport`): set
    /// once by ``LoadOptions/prepareRun()`` before any loop starts, then only read.
    nonisolated(unsafe) static var transport = LoadTransport.tcp
    /// The WebSocket path and the host name for `Host` (`--ws-path`, `--host`).
    nonisolated(unsafe) static var webSocketTarget = (path: "/ws", host: "127.0.0.1")
    /// Connections of the run that got ready (connected; with WebSocket,
    /// upgraded), over every loop: each report says how many, and over
    /// which transport (``Report``).
    static let opened = Atomic<Int>(0)

    /// TLS for every connection of the run (`--tls`): set once by
    /// ``LoadOptions/prepareRun()`` before any loop starts, then only read.
    nonisolated(unsafe) static var tls: (context: TLSContext, host: String)?
    /// The `token` member every `hello` of the run carries (`--token`),
    /// written as JSON (`,"token":"…"`), or empty: set once by
    /// ``LoadOptions/prepareRun()`` before any loop starts, then only read.
    nonisolated(unsafe) static var tokenMember = ""

    /// The body of a `hello` (id 1) for a connection named `name` (a name
    /// the harness makes: no character JSON would escape).
    static func hello(name: String) -> String {
        #"{"type":"hello","id":1,"protocol":1,"client":"outatime-load/0.1","name":"\#(name)"\#(tokenMember)}"#
    }

    private var stream: SocketStream
    /// Server frames may be up to 16 MiB (PROTOCOL.md §1).
    private var decoder = FrameDecoder(maxFrame: 16 * 1024 * 1024)
    /// Set when the transport is WebSocket: the upgrade, then the framing.
    private var webSocket: LoadWebSocket?
    /// `open`'s callback, held until the WebSocket upgrade is answered.
    private var whenUpgraded: (() -> Void)?
    /// Called with each frame body; the pointer is valid only during the call.
    var onFrame: ((UnsafeRawBufferPointer) -> Void)?
    /// Called once with a readable reason when the connection fails.
    var onFailure: ((String) -> Void)?
    private(set) var isClosed = false
    /// Inside `received`: flushes wait until every frame of the read is handled.
    private var reading = false
    private var flushWaiting = false

    init(loop: Loop) { stream = .tcp(TCPStream(loop: loop)) }

    /// Connects to `address`; `connected` runs once reading has started.
    func open(_ address: SocketAddress, _ connected: @escaping () -> Void) {
        stream.tcp.connect(to: address) { [weak self] error in
            guard let self, !self.isClosed else { return }
            if let error {
                self.fail("cannot connect to \(address): \(error)")
                return
            }
            self.stream.setNoDelay()
            if let tls = Self.tls {
                do {
                    self.stream = .tls(try TLSStream(connecting: self.stream.tcp, context: tls.context, host: tls.host))
                } catch {
                    self.fail("cannot start TLS: \(error)")
                    return
                }
            }
            self.stream.onWriteError = { [weak self] error in self?.fail("write failed: \(error)") }
            let stream = self.stream
            do {
                try stream.startReading(
                    onData: { [weak self] bytes in self?.received(bytes) },
                    onEnd: { [weak self] error in
                        if let failure = stream.tlsFailure {
                            self?.fail("TLS failed: \(failure)")
                        } else {
                            self?.fail("server closed the connection (\(error))")
                        }
                    })
            } catch {
                self.fail("cannot start reading: \(error)")
                return
            }
            if Self.transport == .ws {
                let host = Self.webSocketTarget.host
                let webSocket = LoadWebSocket(host: "\(host.contains(":") ? "[\(host)]" : host):\(address.port)",
                                              path: Self.webSocketTarget.path)
                self.webSocket = webSocket
                self.whenUpgraded = connected
                stream.enqueue(OwnedBytes(webSocket.request))
                stream.flush()
            } else {
                Self.opened.add(1, ordering: .relaxed)
                connected()
            }
        }
    }

    /// Queues one frame (header written here) without flushing.
    func enqueue(body: [UInt8]) {
        guard !isClosed else { return }
        if let webSocket {
            stream.enqueue(OwnedBytes(webSocket.frame(body)))
            return
        }
        var frame = [UInt8](repeating: 0, count: 4)
        frame.reserveCapacity(4 + body.count)
        let length = UInt32(body.count)
        frame[0] = UInt8(length >> 24)
        frame[1] = UInt8(length >> 16 & 0xFF)
        frame[2] = UInt8(length >> 8 & 0xFF)
        frame[3] = UInt8(length & 0xFF)
        frame.append(contentsOf: body)
        stream.enqueue(OwnedBytes(frame))
    }

    /// Queues a JSON text body and sends everything queued.
    func send(_ json: String) {
        enqueue(body: Array(json.utf8))
        flush()
    }

    /// Hands queued frames to the kernel. Called while the frames of a read
    /// are being handled (a reply that sends the next request), it waits
    /// until the end of that read: one write for all of them, not one each.
    func flush() {
        if reading {
            flushWaiting = true
        } else {
            stream.flush()
        }
    }

    /// Bytes queued but not yet taken by the kernel.
    var bufferedByteCount: Int { stream.bufferedByteCount }

    /// Closes without reporting a failure.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        onFrame = nil
        onFailure = nil
        stream.close()
    }

    /// Reports `reason` once and closes.
    func fail(_ reason: String) {
        guard !isClosed else { return }
        let callback = onFailure
        close()
        callback?(reason)
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        guard let onFrame else { return }
        reading = true
        defer {
            reading = false
            if flushWaiting {
                flushWaiting = false
                if !isClosed { stream.flush() }
            }
        }
        if let webSocket {
            receiveWebSocket(bytes, webSocket, onFrame)
            return
        }
        do throws(FrameError) {
            try decoder.feed(bytes) { body in onFrame(body) }
        } catch {
            fail("bad frame from the server: \(error)")
        }
    }

    private func receiveWebSocket(_ bytes: UnsafeRawBufferPointer, _ webSocket: LoadWebSocket,
                                  _ onFrame: (UnsafeRawBufferPointer) -> Void) {
        let outcome = webSocket.receive(bytes, onText: onFrame) { [stream] payload in
            stream.enqueue(OwnedBytes(webSocket.frame(.pong, payload)))
            self.flushWaiting = true
        }
        switch outcome {
        case .fine:
            break
        case .upgraded:
            let connected = whenUpgraded
            whenUpgraded = nil
            Self.opened.add(1, ordering: .relaxed)
            connected?()
        case .failed(let reason):
            fail(reason)
        }
    }
}
