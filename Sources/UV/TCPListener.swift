import CLibUV

/// A listening TCP socket. Accept connections from the `onConnection` callback.
///
/// libuv accepts every pending connection in one go, calling back for each,
/// until the kernel's queue is empty. Under a flood the queue refills as fast
/// as it is emptied, and that one go held the loop for seconds while other
/// clients waited (issue 28). With ``listen(backlog:acceptsPerIteration:onConnection:)``'s
/// bound, a connection past it is left with libuv, which then stops watching
/// the listener; the next loop iteration hands it over and watching resumes,
/// so that the other descriptors and the timers have their turn in between.
public final class TCPListener: Handle {
    private var onConnection: ((UVError?) -> Void)?
    /// Connections handed to `onConnection` in this loop iteration, and the bound.
    private var acceptsThisIteration = 0
    private var acceptsPerIteration = Int.max
    /// True while a connection waits for the next iteration (the bound was reached).
    private var holdsConnection = false
    /// Begins the next iteration's count (nil without a bound).
    private var nextIteration: NextTurn?

    /// The backlog ``listen(backlog:acceptsPerIteration:onConnection:)`` asks for: the
    /// kernel caps it at its own maximum (Linux `net.core.somaxconn`, 4,096 by default
    /// since 5.4). A short queue overflows under a burst of connections, and Linux
    /// then answers new ones with SYN cookies whose final ACK it drops while the
    /// queue is full: the client believes it is connected, the server never hears of
    /// it, and a client that waits for the server to speak first waits forever
    /// (5,074 of a 20,000-connection flood with libuv's customary 511; issue 28).
    public static let largestBacklog: Int32 = 65_535

    /// Creates an unbound TCP handle on `loop`.
    public init(loop: Loop) {
        super.init(loop: loop, type: uv_tcp_t.self)
        uv_tcp_init(loop.raw, typed(uv_tcp_t.self))  // cannot fail for AF_UNSPEC
        retainForLibuv()
    }

    /// Binds to a numeric `host` and `port` (0 picks a free port; read it back
    /// with ``localAddress``).
    public func bind(_ address: SocketAddress) throws(UVError) {
        let result = address.withSockaddr { uv_tcp_bind(typed(uv_tcp_t.self), $0, 0) }
        try UVError.check(result)
    }

    /// Starts listening. `onConnection` runs once per pending connection
    /// (nil) or with the accept error; call ``accept()`` in it. With
    /// `acceptsPerIteration`, at most that many connections are handed over
    /// per loop iteration (errors are not counted); the rest wait in the
    /// kernel's queue for the next iterations.
    public func listen(backlog: Int32 = TCPListener.largestBacklog, acceptsPerIteration: Int? = nil,
                       onConnection: @escaping (UVError?) -> Void) throws(UVError) {
        self.onConnection = onConnection
        if let acceptsPerIteration {
            self.acceptsPerIteration = max(1, acceptsPerIteration)
            nextIteration = NextTurn(loop: loop) { [unowned self] in self.beginIteration() }
        }
        let stream = typed(uv_stream_t.self)
        try UVError.check(uv_listen(stream, backlog, Trampolines.onConnection))
    }

    /// Accepts one pending connection.
    public func accept() throws(UVError) -> TCPStream {
        let client = TCPStream(loop: loop)
        let result = uv_accept(typed(uv_stream_t.self), client.typed(uv_stream_t.self))
        if result < 0 {
            client.close()
            throw UVError(result)
        }
        return client
    }

    /// Asks the kernel to hand over a connection only once its first bytes
    /// have arrived, or after about `seconds` without any (Linux
    /// `TCP_DEFER_ACCEPT`; elsewhere nothing). A crowd of connections that
    /// send nothing then costs the process nothing until then: for
    /// protocols where the client speaks first, such as HTTP. Call after
    /// ``bind(_:)``. Returns false when the option could not be set.
    @discardableResult
    public func deferAccept(seconds: Int32) -> Bool {
        #if os(Linux)
        var fd: uv_os_fd_t = -1
        guard uv_fileno(typed(uv_handle_t.self), &fd) == 0 else { return false }
        var value = seconds
        return setsockopt(fd, Int32(IPPROTO_TCP), TCP_DEFER_ACCEPT, &value, socklen_t(MemoryLayout<Int32>.size)) == 0
        #else
        return false
        #endif
    }

    /// The bound address, with the real port when bound to port 0.
    public var localAddress: SocketAddress? {
        SocketAddress.read { uv_tcp_getsockname(typed(uv_tcp_t.self), $0, $1) }
    }

    override func willClose() {
        onConnection = nil
        holdsConnection = false
        nextIteration?.close()
        nextIteration = nil
    }

    func connectionArrived(status: Int32) {
        guard status >= 0 else {
            onConnection?(UVError(status))
            return
        }
        if let nextIteration {
            guard acceptsThisIteration < acceptsPerIteration else {
                // Not accepted: libuv keeps it and stops watching until `accept()`.
                holdsConnection = true
                nextIteration.request()
                return
            }
            acceptsThisIteration += 1
            if acceptsThisIteration == 1 { nextIteration.request() }
        }
        onConnection?(nil)
    }

    /// A new loop iteration after one with accepts: the count begins again,
    /// and a connection left waiting is handed over (watching resumes once
    /// it is accepted).
    private func beginIteration() {
        acceptsThisIteration = 0
        guard holdsConnection else { return }
        holdsConnection = false
        connectionArrived(status: 0)
    }
}
