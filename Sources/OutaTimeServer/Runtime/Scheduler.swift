import UV

/// Every timed wake-up of the server on ONE libuv timer: channels register
/// their next deadline (``ServerClock`` milliseconds) under a key; the timer is armed
/// for the earliest one. Deadlines are absolute, so a late callback never
/// shifts later ones (no drift from counting callbacks).
final class Scheduler<Key: Hashable> {
    private var heap = DeadlineHeap<Key>()
    private let timer: UV.Timer
    private let clock: ServerClock
    private var armedFor: UInt64?
    /// Runs for each due key, in deadline order, with the server's time.
    var onDue: ((Key, UInt64) -> Void)?

    /// A scheduler on `loop`; deadlines are in `clock`'s milliseconds.
    init(loop: Loop, clock: ServerClock) {
        self.clock = clock
        self.timer = UV.Timer(loop: loop)
    }

    /// Runs what is due now: after the clock moved forward
    /// (``ServerClock/advance(milliseconds:)``), before the timer would.
    func catchUp() {
        guard !timer.isClosing else { return }
        fire()
    }

    /// Number of keys with a pending deadline.
    var count: Int { heap.count }

    /// Wakes `key` at `deadline` (loop ms), replacing its earlier deadline.
    func schedule(_ key: Key, at deadline: UInt64) {
        heap.schedule(key, at: deadline)
        arm()
    }

    /// Forgets `key`'s deadline.
    func cancel(_ key: Key) {
        heap.cancel(key)
    }

    func isScheduled(_ key: Key) -> Bool { heap.isScheduled(key) }

    /// Closes the timer handle.
    func close() {
        onDue = nil
        timer.close()
    }

    private func arm() {
        guard !timer.isClosing, let next = heap.earliest() else { return }
        if let armedFor, armedFor <= next { return }
        armedFor = next
        let now = clock.now
        timer.start(timeoutMs: next > now ? next - now : 0) { [unowned self] in self.fire() }
    }

    private func fire() {
        // A callback may drop the last reference to the scheduler (closing
        // it from `onDue`): stay alive until this wake-up is done.
        withExtendedLifetime(self) { fireDue() }
    }

    private func fireDue() {
        armedFor = nil
        // uv_now is cached per iteration; refresh so work done in callbacks
        // does not make later deadlines look due early or late.
        clock.refresh()
        let now = clock.now
        while let key = heap.popDue(now: now) {
            onDue?(key, now)
        }
        arm()
    }
}
