import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// How the kernel finds out that the peer of a TCP connection is gone when
/// the path to it dies without a FIN or reset (a cable pulled, a NAT that
/// forgot the flow, a blackholed route): TCP keepalive probes while nothing
/// is in flight, and `TCP_USER_TIMEOUT` while sent data waits for its
/// acknowledgement. Either way the connection then fails with `ETIMEDOUT`,
/// which reaches the stream's read or write callback like any other error.
public struct TCPLiveness: Sendable, Equatable {
    /// Seconds without anything received before the first keepalive probe;
    /// 0: no keepalive (the kernel's default: off).
    public var keepaliveIdleSeconds: Int32
    /// Seconds between unanswered keepalive probes.
    public var keepaliveIntervalSeconds: Int32
    /// Unanswered probes after which the connection fails.
    public var keepaliveCount: Int32
    /// Milliseconds sent data may stay unacknowledged (or a closed receive
    /// window unanswered) before the connection fails; 0: the kernel's
    /// default (retransmissions back off for about 15 minutes). On Linux it
    /// also caps the keepalive wait: a connection fails once this long has
    /// passed since the last receipt with a probe unanswered.
    public var userTimeoutMs: UInt32

    /// Creates settings; see the fields.
    public init(keepaliveIdleSeconds: Int32, keepaliveIntervalSeconds: Int32, keepaliveCount: Int32,
                userTimeoutMs: UInt32) {
        self.keepaliveIdleSeconds = keepaliveIdleSeconds
        self.keepaliveIntervalSeconds = keepaliveIntervalSeconds
        self.keepaliveCount = keepaliveCount
        self.userTimeoutMs = userTimeoutMs
    }

    /// Nothing set: the kernel's defaults.
    public static let kernelDefaults = TCPLiveness(keepaliveIdleSeconds: 0, keepaliveIntervalSeconds: 0,
                                                   keepaliveCount: 0, userTimeoutMs: 0)
}

extension TCPStream {
    /// Applies `liveness` to the connected socket. libuv's
    /// `uv_tcp_keepalive` sets only the idle time (and, depending on its
    /// version, its own interval and count), so the interval, count and
    /// user timeout are set on the descriptor after it. Returns false when
    /// an option could not be set (the others still are); on systems
    /// without these options only the keepalive itself is set.
    @discardableResult
    public func setLiveness(_ liveness: TCPLiveness) -> Bool {
        var ok = true
        if liveness.keepaliveIdleSeconds > 0 {
            ok = uv_tcp_keepalive(typed(uv_tcp_t.self), 1, UInt32(liveness.keepaliveIdleSeconds)) == 0
        }
        #if os(Linux)
        var fd: uv_os_fd_t = -1
        guard uv_fileno(typed(uv_handle_t.self), &fd) == 0 else { return false }
        func set(_ option: Int32, _ value: Int32) -> Bool {
            var value = value
            return setsockopt(fd, Int32(IPPROTO_TCP), option, &value, socklen_t(MemoryLayout<Int32>.size)) == 0
        }
        if liveness.keepaliveIdleSeconds > 0 {
            if liveness.keepaliveIntervalSeconds > 0 { ok = set(TCP_KEEPINTVL, liveness.keepaliveIntervalSeconds) && ok }
            if liveness.keepaliveCount > 0 { ok = set(TCP_KEEPCNT, liveness.keepaliveCount) && ok }
        }
        if liveness.userTimeoutMs > 0 {
            ok = set(Int32(TCP_USER_TIMEOUT), Int32(clamping: liveness.userTimeoutMs)) && ok
        }
        #endif
        return ok
    }
}

#if os(Linux)
extension TCPStream {
    /// What the kernel holds for this socket (keepalive off: idle 0), for
    /// tests and diagnostics; nil when it cannot be read.
    func currentLiveness() -> TCPLiveness? {
        var fd: uv_os_fd_t = -1
        guard uv_fileno(typed(uv_handle_t.self), &fd) == 0 else { return nil }
        func get(_ level: Int32, _ option: Int32) -> Int32? {
            var value: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(fd, level, option, &value, &size) == 0 ? value : nil
        }
        guard let enabled = get(SOL_SOCKET, SO_KEEPALIVE), let idle = get(Int32(IPPROTO_TCP), TCP_KEEPIDLE),
              let interval = get(Int32(IPPROTO_TCP), TCP_KEEPINTVL), let count = get(Int32(IPPROTO_TCP), TCP_KEEPCNT),
              let userTimeout = get(Int32(IPPROTO_TCP), Int32(TCP_USER_TIMEOUT)) else { return nil }
        return TCPLiveness(keepaliveIdleSeconds: enabled != 0 ? idle : 0, keepaliveIntervalSeconds: interval,
                           keepaliveCount: count, userTimeoutMs: UInt32(clamping: userTimeout))
    }
}
#endif
