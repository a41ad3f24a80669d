import OutaTimeProtocol
import UV

/// A WebSocket connection's input (protocol "WebSocket transport"): bytes
/// → RFC 6455 frames → whole text messages, each one protocol frame body,
/// which then run exactly as a TCP connection's frames do
/// (``take(_:_:)``, the same ``RequestQueue``).
extension Connection {
    /// Bytes from a WebSocket connection (the loop's shared read buffer).
    /// Any frame is activity (heartbeat): data, Ping, Pong, Close.
    func receivedWebSocket(_ bytes: UnsafeRawBufferPointer) {
        let context = self.context  // passed down per frame (see ``received(_:)``)
        context.assertOnLoopThread()
        guard state.isOpen, let link = webSocket, !link.peerClosed else { return }  // closing: discard
        context.counters.bytesIn += bytes.count
        link.decoder.append(bytes)
        while state.isOpen, !link.peerClosed, let event = link.decoder.next() {
            lastActivity = context.time.now
            switch event {
            case .text(let body):
                body.withUnsafeBytes { take($0, context) }
            case .ping(let payload):
                sendWebSocketPong(payload)
            case .pong:
                break
            case .close(let code, _):
                // Like EOF: what the peer sent is answered, then our Close
                // answers its Close and the connection ends (`peer_closed`).
                link.peerClosed = true
                link.peerCloseCode = code
                readSide = .ended
                stream.stopReading()
                closeIfPeerDone()
                return
            case .failure(let failure):
                // The stream is out of sync (or the message is refused):
                // report, say bye, then Close with the failure's code.
                let code: ErrorCode = failure.code == .messageTooBig ? .frameTooLarge : .badFrame
                send(ErrorPush(error: ProtocolError(code, failure.message)))
                link.failureCode = failure.code
                close(bye: .protocolError)
                return
            }
        }
        pauseReadingIfFull()
    }
}
