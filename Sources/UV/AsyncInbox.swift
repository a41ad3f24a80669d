import CLibUV
import Synchronization

/// The loop side of a cross-thread mailbox: messages posted from any thread
/// through its ``sender`` are delivered, in order and in batches, on the loop
/// thread. `uv_async_send` coalesces wake-ups, so each wake-up drains
/// everything queued so far.
public final class AsyncInbox<Message: Sendable> {
    private let wakeup: AsyncWakeup
    /// The thread-safe posting side; hand it to other threads.
    public let sender: InboxSender<Message>

    /// Creates the inbox on `loop`; `onMessages` runs on the loop thread.
    public init(loop: Loop, onMessages: @escaping ([Message]) -> Void) throws(UVError) {
        let wakeup = try AsyncWakeup(loop: loop)
        let sender = InboxSender<Message>(async: wakeup.typed(uv_async_t.self))
        self.wakeup = wakeup
        self.sender = sender
        wakeup.callback = { onMessages(sender.drain()) }
    }

    /// Lets the loop exit while the inbox is open (it still delivers).
    public func unref() { wakeup.unref() }

    /// Stops accepting messages (later posts return false), delivers none of
    /// those still queued, and closes the handle.
    public func close(_ onClosed: (() -> Void)? = nil) {
        sender.markClosed()
        wakeup.close(onClosed)
    }
}

/// The posting side of an ``AsyncInbox``; safe to use from any thread.
public final class InboxSender<Message: Sendable>: Sendable {
    private struct State: ~Copyable {
        var queue: [Message] = []
        var closed = false
    }

    /// The async handle's address; only passed to `uv_async_send`, which is
    /// thread-safe, and only while `closed` is false under the lock.
    private struct AsyncPointer: @unchecked Sendable {
        let raw: UnsafeMutablePointer<uv_async_t>
    }

    private let state = Mutex(State())
    private let async: AsyncPointer

    fileprivate init(async: UnsafeMutablePointer<uv_async_t>) {
        self.async = AsyncPointer(raw: async)
    }

    /// Queues `message` and wakes the loop. Returns false (and drops the
    /// message) when the inbox is closed.
    @discardableResult
    public func post(_ message: sending Message) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.queue.append(message)
            // Inside the lock: the handle cannot be closed under us.
            uv_async_send(async.raw)
            return true
        }
    }

    fileprivate func drain() -> [Message] {
        state.withLock { state in
            let messages = state.queue
            state.queue = []
            return messages
        }
    }

    fileprivate func markClosed() {
        state.withLock { state in
            state.closed = true
            state.queue = []
        }
    }
}

/// The `uv_async_t` handle behind an ``AsyncInbox``.
final class AsyncWakeup: Handle {
    var callback: (() -> Void)?

    init(loop: Loop) throws(UVError) {
        super.init(loop: loop, type: uv_async_t.self)
        let result = uv_async_init(loop.raw, typed(uv_async_t.self), Trampolines.onAsync)
        if result < 0 {
            freeUninitialised()
            throw UVError(result)
        }
        retainForLibuv()
    }

    override func willClose() { callback = nil }

    func fire() { callback?() }
}
