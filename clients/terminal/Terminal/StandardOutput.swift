#if canImport(Glibc)
import Glibc
#endif

/// Stdout for the full-screen views, which libuv may have made non-blocking.
enum StandardOutput {
    /// Writes all of `text` (retrying on a non-blocking descriptor, bounded).
    static func writeAll(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        var spins = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
            if written > 0 {
                offset += written
            } else if written < 0 && (errno == EAGAIN || errno == EINTR) && spins < 10_000 {
                spins += 1
                var pfd = pollfd(fd: 1, events: Int16(POLLOUT), revents: 0)
                _ = poll(&pfd, 1, 10)
            } else {
                return
            }
        }
    }
}
