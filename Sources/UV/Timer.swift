import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// A libuv timer. Times are in milliseconds of the loop's monotonic clock.
public final class Timer: Handle {
    private var callback: (() -> Void)?

    /// Creates a stopped timer on `loop`.
    public init(loop: Loop) {
        super.init(loop: loop, type: uv_timer_t.self)
        uv_timer_init(loop.raw, typed(uv_timer_t.self))  // cannot fail
        retainForLibuv()
    }

    /// Starts (or restarts) the timer: first after `timeoutMs`, then every
    /// `repeatMs` if non-zero. Does nothing once the timer is closing (its
    /// memory goes with the close).
    public func start(timeoutMs: UInt64, repeatMs: UInt64 = 0, _ callback: @escaping () -> Void) {
        guard !isClosing else { return }
        self.callback = callback
        uv_timer_start(typed(uv_timer_t.self), Trampolines.onTimer, timeoutMs, repeatMs)
    }

    /// Stops the timer; it can be started again.
    public func stop() { uv_timer_stop(typed(uv_timer_t.self)) }

    /// Milliseconds until the timer fires next (0 if due or stopped).
    public var dueInMs: UInt64 { uv_timer_get_due_in(typed(uv_timer_t.self)) }

    override func willClose() {
        stop()
        callback = nil
    }

    func fire() { callback?() }
}

/// A prepare handle: its callback runs once per loop iteration, right before
/// the loop blocks for I/O. Used to flush output buffers once per iteration.
public final class Prepare: Handle {
    private var callback: (() -> Void)?

    /// Creates a stopped prepare handle on `loop`.
    public init(loop: Loop) {
        super.init(loop: loop, type: uv_prepare_t.self)
        uv_prepare_init(loop.raw, typed(uv_prepare_t.self))
        retainForLibuv()
    }

    /// Runs `callback` once per loop iteration until ``stop()``.
    public func start(_ callback: @escaping () -> Void) {
        self.callback = callback
        uv_prepare_start(typed(uv_prepare_t.self), Trampolines.onPrepare)
    }

    /// Stops the per-iteration callback.
    public func stop() { uv_prepare_stop(typed(uv_prepare_t.self)) }

    override func willClose() {
        stop()
        callback = nil
    }

    func fire() { callback?() }
}

/// A signal watcher (SIGINT, SIGTERM, …) delivered on the loop thread.
public final class Signal: Handle {
    private var callback: ((Int32) -> Void)?

    /// Creates a signal watcher on `loop`.
    public init(loop: Loop) {
        super.init(loop: loop, type: uv_signal_t.self)
        uv_signal_init(loop.raw, typed(uv_signal_t.self))
        retainForLibuv()
    }

    /// Watches `signum` until ``stop()``.
    public func start(_ signum: Int32, _ callback: @escaping (Int32) -> Void) throws(UVError) {
        self.callback = callback
        try UVError.check(uv_signal_start(typed(uv_signal_t.self), Trampolines.onSignal, signum))
    }

    /// Stops watching.
    public func stop() { uv_signal_stop(typed(uv_signal_t.self)) }

    override func willClose() {
        stop()
        callback = nil
    }

    func fire(_ signum: Int32) { callback?(signum) }
}

extension Signal {
    /// Ignores `signum` process-wide (e.g. SIGPIPE, so a write to a reset
    /// connection fails with EPIPE instead of killing the process).
    public static func ignore(_ signum: Int32) {
        #if canImport(Glibc)
        _ = Glibc.signal(signum, SIG_IGN)
        #endif
    }
}

extension Signal {
    /// Unblocks `signals` for the calling thread. A parent may start us with
    /// SIGINT/SIGTERM blocked (some supervisors and thread pools do); libuv
    /// could then never see them.
    public static func unblock(_ signals: [Int32]) {
        #if canImport(Glibc)
        var set = sigset_t()
        sigemptyset(&set)
        for signum in signals { sigaddset(&set, signum) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        #endif
    }
}
