import OutaTimeProtocol
import UV

/// A WebSocket connection's input (protocol "WebSocket transport"): bytes
/// → RFC 6455 frames → whole text messages, each one protocol frame body,
/// which then run exactly as a TCP connection's frames do
/// (``run(_:on:)``, the same ``RequestQueue``).
extension Server {
    /// Bytes from a WebSocket connection (the loop's shared read buffer).
    /// Any frame is activity (heartbeat): data, Ping, Pong, Close.
    func receivedWebSocket(_ bytes: UnsafeRawBufferPointer, on session: Session) {
        assertOnLoopThread()
        guard session.state.isOpen, let link = session.webSocket, !link.peerClosed else { return }  // closing: discard
        counters.bytesIn += bytes.count
        link.decoder.append(bytes)
        while session.state.isOpen, !link.peerClosed, let event = link.decoder.next() {
            session.lastActivity = loop.now
            switch event {
            case .text(let body):
                if session.requests.isWaiting {
                    body.withUnsafeBytes { session.requests.hold($0) }
                } else {
                    body.withUnsafeBytes { run($0, on: session) }
                }
            case .ping(let payload):
                session.sendWebSocketPong(payload)
            case .pong:
                break
            case .close(let code, _):
                // Like EOF: what the peer sent is answered, then our Close
                // answers its Close and the connection ends (`peer_closed`).
                link.peerClosed = true
                link.peerCloseCode = code
                session.sawEOF = true
                session.stream.stopReading()
                closeIfPeerDone(session)
                return
            case .failure(let failure):
                // The stream is out of sync (or the message is refused):
                // report, say bye, then Close with the failure's code.
                let code: ErrorCode = failure.code == .messageTooBig ? .frameTooLarge : .badFrame
                session.send(ErrorPush(error: ProtocolError(code, failure.message)))
                link.failureCode = failure.code
                close(session, bye: .protocolError)
                return
            }
        }
        pauseReadingIfFull(session)
    }
}
