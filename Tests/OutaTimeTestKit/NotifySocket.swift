import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The service manager's side of `sd_notify`: a bound Unix datagram
/// socket, as systemd binds `/run/systemd/notify`, that a child started
/// with `NOTIFY_SOCKET=<address>` reports to. A path, or `@name` for a
/// Linux abstract socket. Closed on deinit (and a path is removed).
public final class NotifySocket {
    /// What to put in `NOTIFY_SOCKET`.
    public let address: String
    private let fd: Int32

    /// Binds `address`: an absolute path, or `@name` (abstract).
    public init(address: String) throws {
        self.address = address
        var bytes = Array(address.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        var target = sockaddr_un()
        target.sun_family = sa_family_t(AF_UNIX)
        guard bytes.count < MemoryLayout.size(ofValue: target.sun_path) else {
            throw POSIXError(.ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &target.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (abstract ? 0 : 1))
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let bound = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }

    deinit {
        close(fd)
        if address.hasPrefix("/") { unlink(address) }
    }

    /// The next datagram's `KEY=VALUE` lines, in order, or nil after
    /// `timeout` seconds.
    public func receive(timeout: Double = 30) -> [(key: String, value: String)]? {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<1_000 {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return nil }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(remaining * 1000 + 1))
            if ready < 0 && errno != EINTR { return nil }
            guard ready > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count >= 0 else { return nil }
            let text = String(decoding: buffer[..<count], as: UTF8.self)
            return text.split(separator: "\n").map { line in
                let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
            }
        }
        return nil
    }

    /// Whether a datagram is waiting, within `timeout` seconds (not read).
    public func hasPending(timeout: Double) -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, Int32(timeout * 1000)) > 0
    }
}
