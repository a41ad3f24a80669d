#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// The process's open-file limit (`RLIMIT_NOFILE`), for tests that need
/// many descriptors or must know that they cannot have them.
public enum OpenFileLimit {
    #if canImport(Glibc)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif

    /// The hard limit: what the soft one may be raised to; nil if unknown.
    public static var hard: UInt64? {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return nil }
        return UInt64(limit.rlim_max)
    }

    /// Raises the soft limit to `files` if the hard limit allows; true when
    /// the process may now open that many.
    public static func raise(to files: Int) -> Bool {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return false }
        if limit.rlim_cur >= rlim_t(files) { return true }
        guard limit.rlim_max >= rlim_t(files) else { return false }
        limit.rlim_cur = rlim_t(files)
        return setrlimit(resource, &limit) == 0
    }
}
