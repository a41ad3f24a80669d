import CLibUV

/// A listening TCP socket. Accept connections from the `onConnection` callback.
public final class TCPListener: Handle {
    private var onConnection: ((UVError?) -> Void)?

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
    /// (nil) or with the accept error; call ``accept()`` in it.
    public func listen(backlog: Int32 = 511, onConnection: @escaping (UVError?) -> Void) throws(UVError) {
        self.onConnection = onConnection
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

    override func willClose() { onConnection = nil }

    func connectionArrived(status: Int32) {
        onConnection?(status < 0 ? UVError(status) : nil)
    }
}
