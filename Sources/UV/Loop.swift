import CLibUV

/// One libuv event loop. Not thread-safe: every handle on it, and the loop
/// itself, is used only from the thread that runs it (post work from other
/// threads through ``AsyncInbox``).
public final class Loop {
    let raw: UnsafeMutablePointer<uv_loop_t>
    /// One read buffer for every stream of this loop: a read callback consumes
    /// its bytes before the next read starts, so idle connections hold none.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// Scratch `uv_buf_t` array for building one write: libuv copies the
    /// array on `uv_write`, so only the bytes must outlive the call.
    let writeScratch: UnsafeMutablePointer<uv_buf_t>
    /// Where ``TCPStream/flush()`` gathers small queued chunks into one
    /// buffer, so the kernel copies one run per write instead of one per chunk.
    let writeStaging: UnsafeMutableRawBufferPointer
    private var closed = false
    /// Where ``TLSStream`` gathers small writes into one TLS record;
    /// allocated by the first TLS stream of the loop.
    var recordScratch: UnsafeMutableRawBufferPointer?
    /// Pauses streams that used their read budget in this iteration and
    /// defers reads past the iteration's time; created at the first read
    /// (which it times) or with ``readTimePerIteration`` (a loop that never
    /// reads has no extra handle).
    private var budget: ReadBudget?
    /// How long the reads of one loop iteration may take, in nanoseconds,
    /// before the streams still ready wait for a later iteration, each
    /// ready stream read once per round (``ReadBudget``); nil (the default):
    /// no limit. 0 lets one read run per iteration.
    public var readTimePerIteration: UInt64? {
        didSet { if readTimePerIteration != nil { _ = readBudget } }
    }
    /// Reads deferred by ``readTimePerIteration`` so far, counted once per
    /// stream and iteration.
    public var deferredReads: Int { budget?.deferredReads ?? 0 }
    /// The bytes one read asks for: the whole read budget of an iteration,
    /// so a read that fills it pauses the stream (``TCPStream/didRead(_:)``).
    let readSize = min(ReadBudget.bytesPerRead, Loop.readBufferSize)

    /// Size of the shared read buffer: where TLS decrypts, and the most one
    /// read callback delivers (a TCP read asks for ``ReadBudget`` bytes).
    public static let readBufferSize = 64 * 1024
    /// Size of ``writeStaging``.
    static let writeStagingSize = 64 * 1024
    /// The most chunks one write hands to the kernel (below IOV_MAX).
    static let maxChunksPerWrite = 256
    /// The most bytes one `uv_write` is handed (at least one whole chunk).
    /// What the kernel does not take at once stays in libuv until the
    /// write completes and cannot be taken back; the rest waits in the
    /// stream's own queue, where ``TCPStream/dropUnsent()`` can still drop
    /// it (a slow consumer's `bye` goes out ahead of it). TLS encrypts no
    /// more than this ahead of the socket either.
    public static let maxBytesPerWrite = 256 * 1024

    /// Creates and initialises a new loop.
    public init() throws(UVError) {
        raw = .allocate(capacity: 1)
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
        writeScratch = .allocate(capacity: Self.maxChunksPerWrite)
        writeStaging = .allocate(byteCount: Self.writeStagingSize, alignment: 64)
        let result = uv_loop_init(raw)
        if result < 0 {
            raw.deallocate()
            readBuffer.deallocate()
            writeScratch.deallocate()
            writeStaging.deallocate()
            throw UVError(result)
        }
    }

    deinit {
        if !closed { _ = uv_loop_close(raw) }
        raw.deallocate()
        readBuffer.deallocate()
        writeScratch.deallocate()
        writeStaging.deallocate()
        recordScratch?.deallocate()
    }

    /// Runs until no active handle is left or ``stop()`` is called.
    /// Returns true when handles are still alive (i.e. stopped early).
    @discardableResult
    public func run() -> Bool { uv_run(raw, UV_RUN_DEFAULT) != 0 }

    /// Runs one iteration without blocking; returns true when handles are still alive.
    @discardableResult
    public func runNoWait() -> Bool { uv_run(raw, UV_RUN_NOWAIT) != 0 }

    /// Runs one iteration, blocking for I/O if there is nothing pending.
    @discardableResult
    public func runOnce() -> Bool { uv_run(raw, UV_RUN_ONCE) != 0 }

    /// Makes ``run()`` return after the current iteration.
    public func stop() { uv_stop(raw) }

    /// The loop's cached monotonic time in milliseconds (updated at the start of each iteration).
    public var now: UInt64 { uv_now(raw) }

    /// Refreshes the cached time (after long work inside one callback).
    public func updateTime() { uv_update_time(raw) }

    /// A high-resolution monotonic time in nanoseconds.
    public static var hrtime: UInt64 { uv_hrtime() }

    /// The number of handles not yet closed, whether active or not (the
    /// loop's own read-budget handle not counted).
    public var openHandleCount: Int {
        var walk = (count: 0, own: budget.map { UnsafeRawPointer($0.handle) })
        withUnsafeMutablePointer(to: &walk) { pointer in
            uv_walk(raw, { handle, arg in
                let walk = arg!.assumingMemoryBound(to: (count: Int, own: UnsafeRawPointer?).self)
                if UnsafeRawPointer(handle) != walk.pointee.own { walk.pointee.count += 1 }
            }, pointer)
        }
        return walk.count
    }

    /// Pauses `stream`, which used its read budget, until this iteration's
    /// I/O phase is over.
    func pauseForBudget(_ stream: TCPStream) {
        readBudget.pause(stream)
    }

    /// The loop's read budget, created on first use.
    var readBudget: ReadBudget {
        if let budget { return budget }
        let budget = ReadBudget(loop: self)
        self.budget = budget
        return budget
    }

    /// Closes the loop. Fails with `EBUSY` while any handle is still open:
    /// a successful close proves that nothing leaked.
    public func close() throws(UVError) {
        if let budget {
            // The loop's own handle: closed here, once the user's are gone.
            guard openHandleCount == 0 else { throw UVError(UV_EBUSY.rawValue) }
            budget.close()
            self.budget = nil
            uv_run(raw, UV_RUN_NOWAIT)  // runs its close callback
        }
        try UVError.check(uv_loop_close(raw))
        closed = true
    }
}
