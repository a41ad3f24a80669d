import CLibUV

/// A connected TCP stream with reading and buffered, coalesced writing.
///
/// Writes are queued with ``enqueue(_:)`` (no syscall) and sent by
/// ``flush()``: small chunks gathered into one buffer per `write`, larger
/// ones in one `writev`, both through `uv_try_write`; whatever the kernel
/// did not take goes out as one `uv_write` whose chunks stay alive until its
/// callback. At most one `uv_write` is in flight per stream.
public final class TCPStream: Handle {
    private var onData: ((UnsafeRawBufferPointer) -> Void)?
    private var onReadEnd: ((UVError) -> Void)?
    /// Called once if a write fails; the stream should then be closed.
    public var onWriteError: ((UVError) -> Void)?
    /// Called when every queued byte has been handed to the kernel.
    public var onDrained: (() -> Void)?

    // `@exclusivity(unchecked)` on the state a broadcast or a read touches
    // per stream: a stream belongs to its loop's thread and these are never
    // accessed overlapping, while each checked access paid a
    // `swift_beginAccess` (35 % of a 100-subscriber fan-out's instructions
    // under callgrind, issue 28). Only these properties, not the module.
    @exclusivity(unchecked) var queue = WriteQueue()
    @exclusivity(unchecked) var inFlight: PendingWrite?
    /// True while reads are started (by the user: also while paused for
    /// the loop's read budget, see ``ReadBudget``).
    @exclusivity(unchecked) public private(set) var isReading = false
    /// True from a pause for the read budget until the loop renews it.
    @exclusivity(unchecked) private(set) var isOverBudget = false
    /// The loop's read budget (``ReadBudget``, per iteration): the last
    /// round this stream read in, the last iteration it came up in, and
    /// whether it is owed a read in this round (then the budget's list of
    /// debts holds it).
    @exclusivity(unchecked) var readInRound: UInt64 = 0
    @exclusivity(unchecked) var cameUpIn: UInt64 = 0
    @exclusivity(unchecked) var isOwed = false
    /// Set by the budget when this stream came up twice in one iteration:
    /// the deferral's read callback pauses it (``didDefer()``).
    @exclusivity(unchecked) var pausesWhenDeferred = false
    /// Full reads in a row in this iteration (``ReadBudget/mayGoOn(afterFullReads:)``);
    /// reset by a partial read and by a pause, so it never spans iterations.
    @exclusivity(unchecked) var fullReads = 0

    /// Creates an unconnected TCP handle (see ``connect(to:_:)`` or ``TCPListener/accept()``).
    public init(loop: Loop) {
        super.init(loop: loop, type: uv_tcp_t.self)
        uv_tcp_init(loop.raw, typed(uv_tcp_t.self))
        retainForLibuv()
    }

    /// Disables Nagle's algorithm: frames go out as soon as they are flushed.
    public func setNoDelay(_ enabled: Bool = true) {
        uv_tcp_nodelay(typed(uv_tcp_t.self), enabled ? 1 : 0)
    }

    /// The peer's address, if connected.
    public var peerAddress: SocketAddress? {
        SocketAddress.read { uv_tcp_getpeername(typed(uv_tcp_t.self), $0, $1) }
    }

    /// Connects to a numeric address; `completion` gets nil on success.
    public func connect(to address: SocketAddress, _ completion: @escaping (UVError?) -> Void) {
        let pending = PendingConnect(completion: completion)
        pending.request.pointee.data = Unmanaged.passRetained(pending).toOpaque()
        let result = address.withSockaddr {
            uv_tcp_connect(pending.request, typed(uv_tcp_t.self), $0, Trampolines.onConnect)
        }
        if result < 0 {
            // The callback will never run: balance the retain here.
            Unmanaged.passUnretained(pending).release()
            pending.request.deallocate()
            completion(UVError(result))
        }
    }

    /// Starts delivering received bytes. The buffer passed to `onData` is the
    /// loop's shared read buffer: consume or copy it before returning.
    /// `onEnd` gets ``UVError/eof`` on an orderly close, or the read error.
    public func startReading(onData: @escaping (UnsafeRawBufferPointer) -> Void,
                             onEnd: @escaping (UVError) -> Void) throws(UVError) {
        self.onData = onData
        self.onReadEnd = onEnd
        try resumeReading()
    }

    /// Resumes reading with the callbacks given to ``startReading(onData:onEnd:)``.
    public func resumeReading() throws(UVError) {
        guard !isReading, !isClosing else { return }
        // Over budget, the loop starts reads again after this iteration's I/O.
        if !isOverBudget {
            try UVError.check(uv_read_start(typed(uv_stream_t.self), Trampolines.onAlloc, Trampolines.onRead))
        }
        isReading = true
    }

    /// Stops reading (backpressure); the kernel buffers, then the peer blocks.
    public func stopReading() {
        guard isReading else { return }
        uv_read_stop(typed(uv_stream_t.self))
        isReading = false
    }

    /// Sends FIN after all queued writes; `completion` runs when done.
    public func shutdown(_ completion: @escaping (UVError?) -> Void) {
        let pending = PendingShutdown(completion: completion)
        pending.request.pointee.data = Unmanaged.passRetained(pending).toOpaque()
        let result = uv_shutdown(pending.request, typed(uv_stream_t.self), Trampolines.onShutdown)
        if result < 0 {
            Unmanaged.passUnretained(pending).release()
            pending.request.deallocate()
            completion(UVError(result))
        }
    }

    deinit { queue.removeAll() }

    override func willClose() {
        stopReading()
        onData = nil
        onReadEnd = nil
        onWriteError = nil
        onDrained = nil
        queue.removeAll()
    }

    func didRead(_ bytes: UnsafeRawBufferPointer) {
        let started = uv_hrtime()
        onData?(bytes)
        let budget = loop.readBudget
        budget.spent(uv_hrtime() &- started)
        // A read that filled its buffer may have more behind it, and libuv
        // reads again in this iteration unless the stream pauses: it goes
        // on only while the iteration's reads are cheap (``ReadBudget``).
        guard bytes.count == loop.readSize, isReading, !isClosing else {
            fullReads = 0
            return
        }
        fullReads += 1
        if budget.mayGoOn(afterFullReads: fullReads) { return }
        fullReads = 0
        pauseForBudget()
    }

    /// The read budget deferred this read (libuv reported `UV_ENOBUFS`):
    /// the bytes wait in the kernel.
    func didDefer() {
        guard pausesWhenDeferred else { return }
        pausesWhenDeferred = false
        if isReading, !isClosing { pauseForBudget() }
    }

    /// Stops reading until the loop's check renews the budget (after this
    /// iteration's I/O phase); the user's reading state is unchanged.
    func pauseForBudget() {
        guard !isOverBudget else { return }
        uv_read_stop(typed(uv_stream_t.self))
        isOverBudget = true
        loop.pauseForBudget(self)
    }

    /// The next iteration begins: reads start again unless the user
    /// stopped them meanwhile.
    func budgetRenewed() {
        isOverBudget = false
        guard isReading, !isClosing else { return }
        let result = uv_read_start(typed(uv_stream_t.self), Trampolines.onAlloc, Trampolines.onRead)
        if result < 0 { didFailReading(UVError(result)) }
    }

    func didFailReading(_ error: UVError) {
        // libuv stops reading by itself on EOF and errors.
        isReading = false
        onReadEnd?(error)
    }
}

/// A `uv_connect_t` in flight, retained until its callback.
final class PendingConnect {
    let request = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
    let completion: (UVError?) -> Void
    init(completion: @escaping (UVError?) -> Void) { self.completion = completion }
}

/// A `uv_shutdown_t` in flight, retained until its callback.
final class PendingShutdown {
    let request = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
    let completion: (UVError?) -> Void
    init(completion: @escaping (UVError?) -> Void) { self.completion = completion }
}
