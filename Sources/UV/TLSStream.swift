import CLibSSL
import CLibUV

/// TLS over a ``TCPStream``, with the same reading and writing API.
///
/// OpenSSL never touches the socket: it works on two memory BIOs. Bytes
/// libuv reads go into the read BIO, then `SSL_do_handshake` (until the
/// handshake is done) or `SSL_read` turns them into plaintext for `onData`.
/// Queued plaintext goes through `SSL_write` at ``flush()``; what OpenSSL
/// writes into the write BIO (records, handshake messages, alerts) is moved
/// into one chunk and written by the TCP stream.
///
/// Writes queued before the handshake completes wait for it. Small chunks
/// are gathered into records of up to 16 KiB (fewer records, fewer MACs);
/// chunks at least that long are encrypted in place.
///
/// A TLS failure (refused certificate, wrong protocol from the peer, broken
/// record) ends the stream: ``failure`` says why, and `onEnd` of
/// ``startReading(onData:onEnd:)`` gets `EPROTO` (or `onWriteError`, when
/// the failure happened while writing).
public final class TLSStream {
    enum Phase { case handshaking, established, failed }

    /// The TCP connection underneath.
    public let tcp: TCPStream
    /// The context the stream was made from (kept alive with it).
    public let context: TLSContext
    private let ssl: OpaquePointer
    private let readBIO: OpaquePointer
    private let writeBIO: OpaquePointer
    private let gate: TLSHandshakeGate?
    private var phase = Phase.handshaking
    /// Unchecked like ``TCPStream``'s queue (loop thread only; issue 28).
    @exclusivity(unchecked) private var plaintext = WriteQueue()
    private var onData: ((UnsafeRawBufferPointer) -> Void)?
    private var onReadEnd: ((UVError) -> Void)?
    private var endReported = false
    private var sentCloseNotify = false
    private var handshakeStarted = false
    /// Inside ``flush()``: the TCP stream's drain callback does not start another.
    private var isEncrypting = false
    /// Queued in the gate, waiting for the next loop iteration's budget.
    var isWaitingAtGate = false

    /// The first byte received (nil before): the server tells a PROXY
    /// protocol header sent to it by mistake from a broken handshake by it.
    public private(set) var firstByte: UInt8?
    /// Why the stream failed, once it has.
    public private(set) var failure: TLSError?
    /// Called once if a write fails; the stream should then be closed.
    public var onWriteError: ((UVError) -> Void)?
    /// Called when every queued byte has been encrypted and handed to the kernel.
    public var onDrained: (() -> Void)?
    /// Called once, when the handshake has completed.
    public var onHandshakeComplete: (() -> Void)?

    /// The server side of a connection just accepted. With a `gate`, the
    /// handshake advances only within the gate's budget per loop iteration.
    public convenience init(accepting tcp: TCPStream, context: TLSContext,
                            gate: TLSHandshakeGate? = nil) throws(TLSError) {
        precondition(context.role == .server, "TLSStream(accepting:) needs a server context")
        try self.init(tcp: tcp, context: context, gate: gate)
        SSL_set_accept_state(ssl)
    }

    /// The client side of a connected `tcp`, checking that the server's
    /// certificate is valid for `host` (a DNS name, also sent as SNI, or a
    /// numeric address). The handshake starts with ``startReading(onData:onEnd:)``.
    public convenience init(connecting tcp: TCPStream, context: TLSContext, host: String) throws(TLSError) {
        precondition(context.role == .client, "TLSStream(connecting:) needs a client context")
        try self.init(tcp: tcp, context: context, gate: nil)
        SSL_set_connect_state(ssl)
        SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
        if SocketAddress.isNumeric(host) {
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 else {
                throw TLSError.fromQueue("cannot check the certificate against the address \(host)")
            }
        } else {
            guard SSL_set1_host(ssl, host) == 1, outatime_ssl_set_sni(ssl, host) == 1 else {
                throw TLSError.fromQueue("cannot check the certificate against the host name \(host)")
            }
        }
    }

    private init(tcp: TCPStream, context: TLSContext, gate: TLSHandshakeGate?) throws(TLSError) {
        TLSError.drainErrorQueue()
        guard let ssl = SSL_new(context.raw) else { throw TLSError.fromQueue("cannot create a TLS session") }
        guard let readBIO = BIO_new(BIO_s_mem()), let writeBIO = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TLSError.fromQueue("cannot create the TLS buffers")
        }
        outatime_bio_set_eof_retry(readBIO)
        outatime_bio_set_eof_retry(writeBIO)
        SSL_set_bio(ssl, readBIO, writeBIO)  // the SSL owns both from here
        self.tcp = tcp
        self.context = context
        self.ssl = ssl
        self.readBIO = readBIO
        self.writeBIO = writeBIO
        self.gate = gate
        // The TCP stream's callbacks hold this stream until it closes
        // (``TCPStream`` drops them then), like the handle holds itself.
        tcp.onWriteError = { error in self.failWriting(error) }
        tcp.onDrained = {
            if self.plaintext.isEmpty {
                self.onDrained?()
            } else if !self.isEncrypting {
                self.flush()  // the next bounded batch (``flush()``)
            }
        }
    }

    deinit {
        plaintext.removeAll()
        SSL_free(ssl)
    }

    // MARK: State

    /// The loop of the TCP stream.
    public var loop: Loop { tcp.loop }
    /// True once ``close(_:)`` was called.
    public var isClosing: Bool { tcp.isClosing }
    /// True while reads are started.
    public var isReading: Bool { tcp.isReading }
    /// True until the handshake has completed or failed.
    public var isHandshaking: Bool { phase == .handshaking }
    /// True once the handshake has completed (and the stream has not failed).
    public var isEstablished: Bool { phase == .established }
    /// The negotiated protocol, e.g. `TLSv1.3`, once established.
    public var protocolVersion: String? {
        guard phase == .established, let name = SSL_get_version(ssl) else { return nil }
        return String(cString: name)
    }
    /// The peer's address, if connected.
    public var peerAddress: SocketAddress? { tcp.peerAddress }
    /// The subject of the peer's verified certificate, in OpenSSL's RFC 2253
    /// one-line form (most specific part first, e.g. `CN=board-1,O=Hill Valley`;
    /// `openssl x509 -noout -subject -nameopt RFC2253` prints the same after
    /// `subject=`). Nil before the handshake completes, when the peer
    /// presented no certificate, or when its chain was not verified
    /// successfully (a context that does not require client certificates
    /// never asks for one, so a server sees nil there).
    public var peerCertificateSubject: String? {
        guard phase == .established, SSL_get_verify_result(ssl) == Int(X509_V_OK),
              let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        guard let name = X509_get_subject_name(certificate), let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        X509_NAME_print_ex(bio, name, 0, outatime_name_flags_rfc2253())
        let count = outatime_bio_pending(bio)
        var bytes = [UInt8](repeating: 0, count: count)
        _ = BIO_read(bio, &bytes, Int32(count))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Disables Nagle's algorithm on the TCP stream.
    public func setNoDelay(_ enabled: Bool = true) { tcp.setNoDelay(enabled) }

    // MARK: Reading

    /// Starts delivering decrypted bytes (a client starts its handshake
    /// here). The buffer passed to `onData` is the loop's shared read buffer:
    /// consume or copy it before returning. Everything decrypted from one
    /// TCP read is delivered, even if ``stopReading()`` is called meanwhile
    /// (as a TCP read is delivered whole). `onEnd` gets ``UVError/eof``
    /// on an orderly close, `EPROTO` on a TLS failure (see ``failure``), or
    /// the read error.
    public func startReading(onData: @escaping (UnsafeRawBufferPointer) -> Void,
                             onEnd: @escaping (UVError) -> Void) throws(UVError) {
        self.onData = onData
        self.onReadEnd = onEnd
        try tcp.startReading(onData: { bytes in self.receivedCiphertext(bytes) },
                             onEnd: { error in self.tcpEnded(error) })
        if context.role == .client, !handshakeStarted {
            handshakeStarted = true
            advanceHandshake()
        }
    }

    /// Resumes reading with the callbacks given to ``startReading(onData:onEnd:)``.
    public func resumeReading() throws(UVError) {
        guard phase != .failed else { return }
        try tcp.resumeReading()
    }

    /// Stops reading (backpressure).
    public func stopReading() { tcp.stopReading() }

    /// Takes bytes the TCP stream read before this stream started reading
    /// (those after a PROXY protocol header, in the same read) as if they
    /// had just arrived. Call after ``startReading(onData:onEnd:)``.
    public func receivedEarly(_ bytes: UnsafeRawBufferPointer) {
        receivedCiphertext(bytes)
    }

    private func receivedCiphertext(_ bytes: UnsafeRawBufferPointer) {
        guard phase != .failed, let base = bytes.baseAddress else { return }
        if firstByte == nil, let first = bytes.first { firstByte = first }
        // A memory BIO takes everything (it grows).
        guard BIO_write(readBIO, base, Int32(bytes.count)) == Int32(bytes.count) else {
            fail(TLSError.fromQueue("cannot buffer received TLS data"))
            return
        }
        if phase == .handshaking {
            advanceHandshake()
        } else {
            readPlaintext()
        }
    }

    /// One handshake step, if the gate lets it run now (else the gate runs
    /// it again in a later loop iteration).
    func advanceHandshake() {
        guard phase == .handshaking, !tcp.isClosing else { return }
        if let gate, !gate.admit(self) { return }
        TLSError.drainErrorQueue()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            phase = .established
            sendCiphertext()
            let completed = onHandshakeComplete
            onHandshakeComplete = nil
            completed?()
            flush()          // what was queued during the handshake
            readPlaintext()  // data that came with the last handshake flight
            return
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            sendCiphertext()
        default:
            fail(handshakeError())
        }
    }

    private func handshakeError() -> TLSError {
        let verify = SSL_get_verify_result(ssl)
        if verify != X509_V_OK {
            TLSError.drainErrorQueue()
            return TLSError("TLS handshake failed: certificate verify failed: "
                + String(cString: X509_verify_cert_error_string(verify)))
        }
        return TLSError.fromQueue("TLS handshake failed")
    }

    /// Decrypts everything the read BIO holds into the loop's read buffer
    /// (free again: its ciphertext was copied into the BIO) and delivers it.
    private func readPlaintext() {
        let buffer = tcp.loop.readBuffer
        var filled = 0
        while phase == .established, !tcp.isClosing {
            let count = SSL_read(ssl, buffer.baseAddress! + filled, Int32(buffer.count - filled))
            if count > 0 {
                filled += Int(count)
                if filled == buffer.count {
                    deliver(buffer, filled)
                    filled = 0
                }
                continue
            }
            let code = SSL_get_error(ssl, count)
            if filled > 0 { deliver(buffer, filled) }
            filled = 0
            switch code {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                sendCiphertext()  // post-handshake messages may need an answer
                return
            case SSL_ERROR_ZERO_RETURN:
                // The peer's close_notify: an orderly end.
                reportEnd(.eof)
                return
            default:
                fail(TLSError.fromQueue("TLS read failed"))
                return
            }
        }
    }

    private func deliver(_ buffer: UnsafeMutableRawBufferPointer, _ count: Int) {
        guard !tcp.isClosing else { return }
        onData?(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }

    private func tcpEnded(_ error: UVError) {
        if phase == .handshaking {
            failure = TLSError(error.isEOF ? "the peer closed the connection during the TLS handshake"
                                           : "the connection failed during the TLS handshake: \(error)")
            phase = .failed
        }
        reportEnd(error)
    }

    private func reportEnd(_ error: UVError) {
        guard !endReported else { return }
        endReported = true
        onReadEnd?(error)
    }

    /// The stream cannot go on: alert the peer if OpenSSL wrote one, stop
    /// reading, report once.
    private func fail(_ error: TLSError) {
        guard phase != .failed else { return }
        phase = .failed
        failure = error
        sendCiphertext()
        tcp.stopReading()
        plaintext.removeAll()
        reportEnd(UVError(Int32(UV_EPROTO.rawValue)))
    }

    private func failWriting(_ error: UVError) {
        plaintext.removeAll()
        let callback = onWriteError
        onWriteError = nil
        callback?(error)
    }

    // MARK: Writing

    /// Queues `chunk` for the next ``flush()``; no copy, no syscall.
    public func enqueue(_ chunk: ByteChunk) {
        guard !tcp.isClosing, phase != .failed, !sentCloseNotify else { return }
        plaintext.append(chunk)
    }

    /// Plaintext bytes queued plus encrypted bytes not yet taken by the kernel.
    public var bufferedByteCount: Int { plaintext.byteCount + tcp.bufferedByteCount }

    /// True when nothing is queued or in flight.
    public var isDrained: Bool { plaintext.isEmpty && tcp.isDrained }

    /// Encrypts what is queued and writes it (nothing before the handshake
    /// has completed: the handshake flushes then). Plaintext is encrypted
    /// only while the TCP stream is drained, ``Loop/maxBytesPerWrite`` at a
    /// time (the rest when the TCP stream drains again): what waits stays
    /// plaintext, whole frames that ``dropUnsent()`` can still drop, since
    /// ciphertext cannot be dropped without breaking the record stream.
    public func flush() {
        guard phase == .established, !tcp.isClosing, !isEncrypting else { return }
        if plaintext.isEmpty || !tcp.isDrained {
            tcp.flush()
            return
        }
        isEncrypting = true
        defer { isEncrypting = false }
        while !plaintext.isEmpty, tcp.isDrained, !tcp.isClosing {
            guard encryptQueued(upTo: Loop.maxBytesPerWrite) else { return }
            sendCiphertext()
        }
    }

    /// Drops the queued plaintext not encrypted yet (whole chunks); what
    /// is encrypted goes on. Returns the bytes dropped.
    @discardableResult
    public func dropUnsent() -> Int {
        let dropped = plaintext.byteCount
        plaintext.removeAll()
        return dropped
    }

    /// `SSL_write`s queued chunks, whole, until at least `limit` bytes are
    /// encrypted or the queue is empty: small ones gathered into records of
    /// up to 16 KiB in the loop's scratch buffer, long ones in place.
    private func encryptQueued(upTo limit: Int) -> Bool {
        let loop = tcp.loop
        let scratch = loop.recordScratch ?? {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)
            loop.recordScratch = buffer
            return buffer
        }()
        let capacity = scratch.count
        let buffers = loop.writeScratch
        var gathered = 0
        func write(_ base: UnsafeRawPointer, _ count: Int) -> Bool {
            TLSError.drainErrorQueue()
            guard SSL_write(ssl, base, Int32(count)) == Int32(count) else {
                let error = TLSError.fromQueue("TLS write failed")
                failure = error
                phase = .failed
                tcp.stopReading()
                failWriting(UVError(Int32(UV_EPROTO.rawValue)))
                return false
            }
            return true
        }
        var encrypted = 0
        while !plaintext.isEmpty, encrypted < limit {
            let count = plaintext.fill(buffers, max: Loop.maxChunksPerWrite, maxBytes: limit - encrypted)
            var total = 0
            for index in 0..<count {
                var base = UnsafeRawPointer(buffers[index].base!)
                var left = Int(buffers[index].len)
                total += left
                while left > 0 {
                    if gathered == 0 && left >= capacity {
                        guard write(base, left) else { return false }
                        break
                    }
                    let take = min(left, capacity - gathered)
                    (scratch.baseAddress! + gathered).copyMemory(from: base, byteCount: take)
                    gathered += take
                    base += take
                    left -= take
                    if gathered == capacity {
                        guard write(scratch.baseAddress!, gathered) else { return false }
                        gathered = 0
                    }
                }
            }
            plaintext.consume(total)
            encrypted += total
        }
        if gathered > 0 { return write(scratch.baseAddress!, gathered) }
        return true
    }

    /// Moves what OpenSSL wrote into the write BIO to the TCP stream, as one chunk.
    private func sendCiphertext() {
        let pending = outatime_bio_pending(writeBIO)
        guard pending > 0, !tcp.isClosing else { return }
        let chunk = OwnedBytes(capacity: pending) { buffer in
            Int(BIO_read(writeBIO, buffer.baseAddress, Int32(pending)))
        }
        tcp.enqueue(chunk)
        tcp.flush()
    }

    /// Sends TLS's close_notify (when established) after what is queued,
    /// then FIN; `completion` runs when done.
    public func shutdown(_ completion: @escaping (UVError?) -> Void) {
        if phase == .established && !sentCloseNotify {
            flush()
            // close_notify goes after every byte queued, also what the
            // bounded flush left waiting for the TCP stream to drain.
            if !plaintext.isEmpty, !isEncrypting, encryptQueued(upTo: .max) { sendCiphertext() }
            sentCloseNotify = true
            TLSError.drainErrorQueue()
            _ = SSL_shutdown(ssl)
            TLSError.drainErrorQueue()
            sendCiphertext()
        }
        tcp.shutdown(completion)
    }

    /// Closes the connection; `onClosed` runs once the socket is closed.
    /// Queued output is dropped.
    public func close(_ onClosed: (() -> Void)? = nil) {
        if !tcp.isClosing {
            plaintext.removeAll()
            onData = nil
            onReadEnd = nil
            onWriteError = nil
            onDrained = nil
            onHandshakeComplete = nil
        }
        tcp.close(onClosed)
    }
}

/// Bounds the handshake work of one loop: at most `perIteration` handshake
/// steps (`SSL_do_handshake` calls of server streams made with the gate)
/// run per loop iteration; the others wait, in order, for the next
/// iterations, so that a burst of new TLS connections cannot stall the
/// loop for everyone else. The budget is renewed in a prepare callback,
/// right before the loop polls for I/O; while streams wait, a zero timer
/// keeps the loop from blocking.
public final class TLSHandshakeGate {
    /// Handshake steps allowed per loop iteration.
    public let perIteration: Int
    /// How many times a handshake step had to wait for a later iteration.
    public private(set) var deferredCount = 0
    private var budget: Int
    private var waiting: [TLSStream] = []
    private var head = 0
    private let prepare: Prepare
    private let wake: Timer

    /// A gate on `loop`; close it with ``close()`` before closing the loop.
    public init(loop: Loop, perIteration: Int) {
        precondition(perIteration >= 1, "a handshake gate must let at least one step through")
        self.perIteration = perIteration
        budget = perIteration
        prepare = Prepare(loop: loop)
        wake = Timer(loop: loop)
        prepare.start { [unowned self] in self.newIteration() }
        prepare.unref()
        wake.unref()
    }

    /// Handshake steps waiting for a later iteration.
    public var waitingCount: Int { waiting.count - head }

    /// Takes one step from the budget, or queues `stream` for later.
    func admit(_ stream: TLSStream) -> Bool {
        if budget > 0 && !stream.isWaitingAtGate {
            budget -= 1
            return true
        }
        if !stream.isWaitingAtGate {
            stream.isWaitingAtGate = true
            waiting.append(stream)
            deferredCount += 1
        }
        wake.start(timeoutMs: 0) {}
        return false
    }

    private func newIteration() {
        budget = perIteration
        while budget > 0, head < waiting.count {
            let stream = waiting[head]
            head += 1
            stream.isWaitingAtGate = false
            stream.advanceHandshake()
        }
        if head == waiting.count {
            if !waiting.isEmpty { waiting = [] }
            head = 0
        } else {
            waiting.removeFirst(head)
            head = 0
            wake.start(timeoutMs: 0) {}
        }
    }

    /// Closes the gate's handles; waiting streams are forgotten.
    public func close() {
        prepare.close()
        wake.close()
        waiting = []
        head = 0
    }
}
