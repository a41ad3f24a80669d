#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// CPU time this process and its loop threads have used, so that a report
/// can say whether the harness itself was busy enough to set the pace of a
/// run. Like ``OpenFileLimit``, a direct C call about the process, not the
/// event loop.
enum CPUClock {
    /// User + system CPU seconds the whole process has used so far.
    static func processSeconds() -> Double {
        var usage = rusage()
        #if canImport(Glibc)
        let status = getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
        let status = getrusage(RUSAGE_SELF, &usage)
        #endif
        guard status == 0 else { return 0 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// The calling thread's CPU clock, which other threads can read while
    /// this one runs; nil where the platform offers none (Linux has it).
    static func currentThread() -> ThreadCPUClock? {
        #if os(Linux)
        var clock = clockid_t()
        guard pthread_getcpuclockid(pthread_self(), &clock) == 0 else { return nil }
        return ThreadCPUClock(id: clock)
        #else
        return nil
        #endif
    }

    private static func seconds(_ value: timeval) -> Double {
        Double(value.tv_sec) + Double(value.tv_usec) / 1_000_000
    }
}

/// One thread's CPU clock (see ``CPUClock/currentThread()``). Read it only
/// while the thread runs: the id means nothing once the thread has ended.
struct ThreadCPUClock: Sendable {
    let id: clockid_t

    /// CPU seconds the thread has used so far; nil if the clock cannot be read.
    func seconds() -> Double? {
        var time = timespec()
        guard clock_gettime(id, &time) == 0 else { return nil }
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
