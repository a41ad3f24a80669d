import CNats
import Dispatch
import Foundation
import Synchronization

/// What a key-value watch reports.
public enum KeyValueWatchEvent: Sendable, Equatable {
    /// A key's value changed (or, before ``caughtUp``, its current value).
    case entry(KeyValueEntry)
    /// Every value present when the watch started has been reported; what
    /// follows is live.
    case caughtUp
}

extension KeyValueBucket {
    /// Watches the keys matching `keys` (`>` for all; wildcards allowed):
    /// first each current value, then ``KeyValueWatchEvent/caughtUp``, then
    /// every change. `handler` runs on the watch's own thread, one event at
    /// a time, until ``KeyValueWatch/stop()``.
    public func watch(_ keys: String = ">", handler: @escaping @Sendable (KeyValueWatchEvent) -> Void) throws(NATSError) -> KeyValueWatch {
        var watcher: OpaquePointer?
        try check(kvStore_Watch(&watcher, pointer, keys, nil), "watch '\(keys)' in bucket '\(name)'")
        return KeyValueWatch(watcher: watcher!, bucket: self, handler: handler)
    }
}

/// A running key-value watch: one thread that waits on libnats' watcher
/// (`kvWatcher_Next` has no callback form) and calls the handler.
public final class KeyValueWatch: Sendable {
    private let loop: WatchLoop
    private let stopped = Mutex(false)
    // Keeps the bucket (and its connection) alive while the watch runs.
    private let bucket: KeyValueBucket

    init(watcher: OpaquePointer, bucket: KeyValueBucket, handler: @escaping @Sendable (KeyValueWatchEvent) -> Void) {
        loop = WatchLoop(watcher: watcher)
        self.bucket = bucket
        let thread = Thread { [loop] in loop.run(handler) }
        thread.name = "nats-kv-watch-\(bucket.name)"
        thread.start()
    }

    /// Stops the watch and waits (up to `timeout`) for the handler's last
    /// call to return; idempotent. Returns false if the thread did not end
    /// in time (it then ends at its next wake-up, within 100 ms).
    @discardableResult
    public func stop(timeout: Duration = .seconds(2)) -> Bool {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return true }
        return loop.stop(timeout: timeout)
    }

    deinit {
        stop()
        loop.waitAndDestroy()
    }
}

/// The watch thread's state, shared with the owner that stops it.
private final class WatchLoop: @unchecked Sendable {
    // @unchecked: `watcher` is used only by the watch thread, and
    // destroyed only after that thread has ended.
    private let watcher: OpaquePointer
    private let stopping = Atomic(false)
    private let ended = DispatchSemaphore(value: 0)

    /// How long one kvWatcher_Next waits, in ms: the bound on stopping.
    static let poll: Int64 = 100

    init(watcher: OpaquePointer) { self.watcher = watcher }

    func run(_ handler: @Sendable (KeyValueWatchEvent) -> Void) {
        while !stopping.load(ordering: .acquiring) {
            var entry: OpaquePointer?
            let status = kvWatcher_Next(&entry, watcher, Self.poll)
            if status == NATS_TIMEOUT { continue }
            guard status == NATS_OK else {
                if let entry { kvEntry_Destroy(entry) }
                break  // stopped, or the connection closed for good
            }
            if let entry {
                let value = KeyValueEntry(copying: entry)
                kvEntry_Destroy(entry)
                if !stopping.load(ordering: .acquiring) { handler(.entry(value)) }
            } else {
                handler(.caughtUp)
            }
        }
        ended.signal()
    }

    func stop(timeout: Duration) -> Bool {
        // Not kvWatcher_Stop while kvWatcher_Next waits: libnats 3.4 then
        // returns without destroying the message it just took (kv.c, the
        // `w->stopped` check after natsSubscription_NextMsg), a leak seen
        // under LeakSanitizer. The loop sees the flag within one poll.
        stopping.store(true, ordering: .releasing)
        let done = ended.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds))) == .success
        if done { ended.signal() }  // waitAndDestroy waits on it too
        return done
    }

    func waitAndDestroy() {
        ended.wait()
        kvWatcher_Destroy(watcher)
    }
}
