import Dispatch
import Foundation
import Synchronization
import UV

/// Runs one loop per thread. Each thread builds its loop and its worker,
/// registers the worker's inbox and runs until the worker closes its handles.
final class WorkerThreads: Sendable {
    private let finished = DispatchSemaphore(value: 0)
    private let count: Int
    private let clocks: ThreadClocks

    /// Starts `count` threads; `makeWorker(index, loop)` runs on each thread
    /// and returns the worker, kept alive while its loop runs (or throws, which counts as finished).
    init(count: Int, makeWorker: @escaping @Sendable (Int, Loop) throws -> AnyObject,
         onStartFailure: @escaping @Sendable (Int, Error) -> Void) {
        self.count = count
        clocks = ThreadClocks(count: count)
        let started = DispatchSemaphore(value: 0)
        for index in 0..<count {
            let finished = finished
            let clocks = clocks
            let thread = Thread {
                // Named from inside, at most 15 bytes: on Linux a name set
                // before `start()` never reaches the kernel (`ps -L`, `perf`).
                Thread.current.name = "load-loop-\(index)"
                clocks.set(CPUClock.currentThread(), at: index)
                defer {
                    clocks.set(nil, at: index)
                    finished.signal()
                }
                let loop: Loop
                let worker: AnyObject
                do {
                    loop = try Loop()
                    worker = try makeWorker(index, loop)
                } catch {
                    onStartFailure(index, error)
                    started.signal()
                    return
                }
                started.signal()
                withExtendedLifetime(worker) { _ = loop.run() }
                try? loop.close()
            }
            thread.start()
        }
        for _ in 0..<count { started.wait() }
    }

    /// CPU seconds each loop thread has used so far (nil for one that has
    /// ended or whose clock cannot be read).
    func cpuSeconds() -> [Double?] {
        clocks.seconds()
    }

    /// Waits up to `seconds` for every thread to end; false on timeout.
    func join(within seconds: Double) -> Bool {
        let deadline = DispatchTime.now() + seconds
        for _ in 0..<count where finished.wait(timeout: deadline) == .timedOut { return false }
        return true
    }
}

/// Each running loop thread's CPU clock, by thread index (nil once the
/// thread has ended, or where unsupported).
private final class ThreadClocks: Sendable {
    private let clocks: Mutex<[ThreadCPUClock?]>

    init(count: Int) { clocks = Mutex(Array(repeating: nil, count: count)) }

    func set(_ clock: ThreadCPUClock?, at index: Int) { clocks.withLock { $0[index] = clock } }

    /// Read under the lock, so that a thread cannot end (and its clock id
    /// lose its meaning) during the reading.
    func seconds() -> [Double?] { clocks.withLock { list in list.map { $0?.seconds() } } }
}
