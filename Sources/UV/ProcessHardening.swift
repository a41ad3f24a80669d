import CLibUV
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a process holding keys and tokens does to itself at start, and the
/// file checks it makes: the libc side (`umask`, `prctl`, `stat`), so that
/// server code sees none of it.
public enum ProcessHardening {
    /// Sets the file-mode creation mask to 077: the database, its WAL and
    /// lock files are made readable by their owner only.
    public static func restrictNewFileModes() {
        umask(0o077)
    }

    /// Turns core dumps off for this process (`PR_SET_DUMPABLE` 0), so that a
    /// crash cannot write the TLS key or tokens to disk; it also keeps other
    /// processes of the same user from attaching a debugger or reading
    /// `/proc/PID/mem`. True when done (always false off Linux).
    @discardableResult
    public static func forbidCoreDumps() -> Bool {
        #if os(Linux)
        return outatime_set_dumpable(0) == 0
        #else
        return false
        #endif
    }

    /// Whether this process may be dumped (false after ``forbidCoreDumps()``).
    public static var isDumpable: Bool {
        #if os(Linux)
        return outatime_get_dumpable() != 0
        #else
        return true
        #endif
    }

    /// True when the process runs with the superuser's effective user id.
    public static var runsAsRoot: Bool { geteuid() == 0 }

    /// The permission bits of `path` (`st_mode & 0o777`) and whether its
    /// group is this process's effective group; nil when `path` cannot be
    /// examined. Follows symbolic links: what counts is the file read.
    public static func access(of path: String) -> (mode: UInt32, groupIsOurs: Bool)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (UInt32(info.st_mode) & 0o777, info.st_gid == getegid())
    }
}
