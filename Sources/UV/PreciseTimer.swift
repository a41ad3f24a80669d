import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// A one-shot timer with microsecond resolution.
///
/// libuv's own timers count whole milliseconds. The server's write
/// coalescing waits a few hundred microseconds, so on Linux this is a
/// `timerfd` (`CLOCK_MONOTONIC`) watched by a `uv_poll_t`: the loop wakes
/// when the fd turns readable. Elsewhere it falls back to a libuv timer
/// rounded up to the next millisecond.
public final class PreciseTimer: Handle {
    private var callback: (() -> Void)?
    #if os(Linux)
    private let fd: Int32
    private var polling = false
    #endif

    /// Creates a stopped timer on `loop`.
    /// - Throws: ``UVError`` when the kernel refuses a timer fd (fd limit).
    public init(loop: Loop) throws(UVError) {
        #if os(Linux)
        let fd = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard fd >= 0 else { throw UVError(-errno) }
        self.fd = fd
        super.init(loop: loop, type: uv_poll_t.self)
        let result = uv_poll_init(loop.raw, typed(uv_poll_t.self), fd)
        guard result == 0 else {
            Glibc.close(fd)
            freeUninitialised()
            throw UVError(result)
        }
        #else
        super.init(loop: loop, type: uv_timer_t.self)
        uv_timer_init(loop.raw, typed(uv_timer_t.self))
        #endif
        retainForLibuv()
    }

    /// Runs `callback` once, `nanoseconds` from now (at least 1 µs).
    /// Starting again before it fired replaces the deadline and callback.
    public func start(afterNanoseconds nanoseconds: UInt64, _ callback: @escaping () -> Void) {
        guard !isClosing else { return }
        self.callback = callback
        #if os(Linux)
        let delay = max(nanoseconds, 1_000)
        var spec = itimerspec()
        spec.it_value.tv_sec = Int(delay / 1_000_000_000)
        spec.it_value.tv_nsec = Int(delay % 1_000_000_000)
        timerfd_settime(fd, 0, &spec, nil)
        if !polling {
            uv_poll_start(typed(uv_poll_t.self), Int32(UV_READABLE.rawValue), Trampolines.onPreciseTimer)
            polling = true
        }
        #else
        let milliseconds = (nanoseconds + 999_999) / 1_000_000
        uv_timer_start(typed(uv_timer_t.self), Trampolines.onPreciseTimerFallback, milliseconds, 0)
        #endif
    }

    /// Cancels a pending run.
    public func stop() {
        #if os(Linux)
        var spec = itimerspec()
        timerfd_settime(fd, 0, &spec, nil)
        if polling {
            uv_poll_stop(typed(uv_poll_t.self))
            polling = false
        }
        #else
        uv_timer_stop(typed(uv_timer_t.self))
        #endif
    }

    override func willClose() {
        stop()
        callback = nil
    }

    override func didClose() {
        super.didClose()
        #if os(Linux)
        Glibc.close(fd)
        #endif
    }

    /// The fd turned readable: the deadline passed.
    func fire() {
        #if os(Linux)
        var expirations: UInt64 = 0
        _ = read(fd, &expirations, MemoryLayout<UInt64>.size)
        uv_poll_stop(typed(uv_poll_t.self))
        polling = false
        #endif
        let callback = self.callback
        self.callback = nil
        callback?()
    }
}
