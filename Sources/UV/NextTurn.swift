import CLibUV

/// Runs a callback once in the next loop iteration: work that was put off
/// to let others have their turn (a time budget was spent). ``request()``
/// asks for a turn; asked again from the callback, it asks for the
/// iteration after. While a turn is pending the loop does not block in its
/// poll.
///
/// A timer with timeout 0 is not the same: libuv before 1.48 (Debian 12
/// has 1.44) runs a zero timer that is started again from its own callback
/// again within the same iteration, so the work would never yield (libuv
/// issue 4245). This is a libuv idle handle, started on demand: an idle
/// handle started from its callback runs in the next iteration.
public final class NextTurn: Handle {
    private var callback: (() -> Void)?
    /// True from ``request()`` until the callback runs.
    public private(set) var isRequested = false

    /// Creates the handle on `loop`, with the work each turn does.
    public convenience init(loop: Loop, _ callback: @escaping () -> Void) {
        self.init(loop: loop)
        self.callback = callback
    }

    /// Creates the handle on `loop` without work yet: its owner makes it
    /// where the loop is made and gives it the work with ``setWork(_:)``
    /// once it can (a turn requested before then runs nothing).
    public init(loop: Loop) {
        super.init(loop: loop, type: uv_idle_t.self)
        uv_idle_init(loop.raw, typed(uv_idle_t.self))  // cannot fail
        retainForLibuv()
    }

    /// Sets the work each turn does (replacing any earlier). Does nothing
    /// once closing: closing dropped the work for good.
    public func setWork(_ callback: @escaping () -> Void) {
        guard !isClosing else { return }
        self.callback = callback
    }

    /// Asks for one run of the callback in the next loop iteration (once,
    /// however often it is asked before then). Does nothing once closing.
    public func request() {
        guard !isRequested, !isClosing else { return }
        isRequested = true
        uv_idle_start(typed(uv_idle_t.self), Trampolines.onIdle)
    }

    override func willClose() {
        uv_idle_stop(typed(uv_idle_t.self))
        isRequested = false
        callback = nil
    }

    func fire() {
        uv_idle_stop(typed(uv_idle_t.self))
        isRequested = false
        callback?()
    }
}
