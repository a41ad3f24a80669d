#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's open-file limit. Thousands of connections need more than
/// the usual soft limit of 1024, so the harness raises its soft limit to the
/// hard limit before connecting. This is the one direct C call outside the
/// `UV` module: it is about the process, not the event loop.
enum OpenFileLimit {
    /// Raises the soft limit as far as the hard limit allows; returns the
    /// limit in force afterwards (nil if it cannot be read).
    @discardableResult
    static func raise() -> UInt64? {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { return UInt64(raised.rlim_max) }
        }
        return UInt64(limit.rlim_cur)
    }

    #if canImport(Glibc)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif
}
