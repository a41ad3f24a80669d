/// A connection that is either plain TCP or TLS, with one API: what the
/// server's sessions and the clients hold. An enum rather than a protocol
/// so that the plaintext path stays a direct call to ``TCPStream`` (one
/// branch, no existential, no extra copy or allocation per frame).
public enum SocketStream {
    /// Plain TCP.
    case tcp(TCPStream)
    /// TLS over TCP.
    case tls(TLSStream)

    /// The TCP stream underneath.
    @inlinable public var tcp: TCPStream {
        switch self {
        case .tcp(let stream): stream
        case .tls(let stream): stream.tcp
        }
    }

    /// The TLS stream, if this is TLS.
    @inlinable public var tls: TLSStream? {
        if case .tls(let stream) = self { return stream }
        return nil
    }

    /// True for TLS whose handshake has not completed yet: nothing can be
    /// sent to the peer (a `bye` could not be read).
    @inlinable public var isHandshaking: Bool { tls?.isHandshaking ?? false }

    /// Queues `chunk` for the next ``flush()``.
    @inlinable public func enqueue(_ chunk: ByteChunk) {
        switch self {
        case .tcp(let stream): stream.enqueue(chunk)
        case .tls(let stream): stream.enqueue(chunk)
        }
    }

    /// Drops queued output not yet handed to the kernel or libuv (for TLS:
    /// plaintext not encrypted yet), whole chunks only; returns the bytes
    /// dropped. What follows (a `bye`) goes out right behind what is in flight.
    @inlinable @discardableResult public func dropUnsent() -> Int {
        switch self {
        case .tcp(let stream): stream.dropUnsent()
        case .tls(let stream): stream.dropUnsent()
        }
    }

    /// Sends what is queued.
    @inlinable public func flush() {
        switch self {
        case .tcp(let stream): stream.flush()
        case .tls(let stream): stream.flush()
        }
    }

    /// Bytes queued or in flight (for TLS: plaintext queued plus ciphertext in flight).
    @inlinable public var bufferedByteCount: Int {
        switch self {
        case .tcp(let stream): stream.bufferedByteCount
        case .tls(let stream): stream.bufferedByteCount
        }
    }

    /// True when nothing is queued or in flight.
    @inlinable public var isDrained: Bool {
        switch self {
        case .tcp(let stream): stream.isDrained
        case .tls(let stream): stream.isDrained
        }
    }

    /// Called when every queued byte has been handed to the kernel.
    @inlinable public var onDrained: (() -> Void)? {
        get {
            switch self {
            case .tcp(let stream): stream.onDrained
            case .tls(let stream): stream.onDrained
            }
        }
        nonmutating set {
            switch self {
            case .tcp(let stream): stream.onDrained = newValue
            case .tls(let stream): stream.onDrained = newValue
            }
        }
    }

    /// Called once if a write fails.
    @inlinable public var onWriteError: ((UVError) -> Void)? {
        get {
            switch self {
            case .tcp(let stream): stream.onWriteError
            case .tls(let stream): stream.onWriteError
            }
        }
        nonmutating set {
            switch self {
            case .tcp(let stream): stream.onWriteError = newValue
            case .tls(let stream): stream.onWriteError = newValue
            }
        }
    }

    /// Starts delivering received (for TLS: decrypted) bytes.
    @inlinable public func startReading(onData: @escaping (UnsafeRawBufferPointer) -> Void,
                                        onEnd: @escaping (UVError) -> Void) throws(UVError) {
        switch self {
        case .tcp(let stream): try stream.startReading(onData: onData, onEnd: onEnd)
        case .tls(let stream): try stream.startReading(onData: onData, onEnd: onEnd)
        }
    }

    /// Resumes reading.
    @inlinable public func resumeReading() throws(UVError) {
        switch self {
        case .tcp(let stream): try stream.resumeReading()
        case .tls(let stream): try stream.resumeReading()
        }
    }

    /// Stops reading (backpressure).
    @inlinable public func stopReading() {
        switch self {
        case .tcp(let stream): stream.stopReading()
        case .tls(let stream): stream.stopReading()
        }
    }

    /// FIN (for TLS after close_notify) once queued writes are out.
    @inlinable public func shutdown(_ completion: @escaping (UVError?) -> Void) {
        switch self {
        case .tcp(let stream): stream.shutdown(completion)
        case .tls(let stream): stream.shutdown(completion)
        }
    }

    /// Closes the connection.
    @inlinable public func close(_ onClosed: (() -> Void)? = nil) {
        switch self {
        case .tcp(let stream): stream.close(onClosed)
        case .tls(let stream): stream.close(onClosed)
        }
    }

    /// True once closing.
    @inlinable public var isClosing: Bool { tcp.isClosing }

    /// The peer's address.
    @inlinable public var peerAddress: SocketAddress? { tcp.peerAddress }

    /// Disables Nagle's algorithm.
    @inlinable public func setNoDelay(_ enabled: Bool = true) { tcp.setNoDelay(enabled) }

    /// Why a TLS stream failed, if it did.
    @inlinable public var tlsFailure: TLSError? { tls?.failure }
}
