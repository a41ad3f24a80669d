import CLibUV
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells systemd how the service is doing (`Type=notify`): one datagram of
/// `KEY=VALUE` lines to the socket named by `$NOTIFY_SOCKET`, as
/// `sd_notify(3)` does. systemd documents this protocol as stable and small
/// enough to implement without libsystemd (systemd.io, "The sd_notify
/// protocol"), so the server does not link libsystemd for one `sendto`.
///
/// Supports a socket path (`/run/systemd/notify`) and a Linux abstract name
/// (`@name`); systemd passes one of these. Sends never block: a full socket
/// queue is an error the caller logs, not a stall of the event loop.
///
/// `@unchecked Sendable`: every stored property is a `let`, and `sendto` on
/// one descriptor is safe from any thread.
public final class ServiceNotifier: @unchecked Sendable {
    /// Why a notification could not be set up or sent.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// `$NOTIFY_SOCKET` is neither an absolute path nor an `@` abstract
        /// name (or is too long for a Unix socket address).
        case unsupportedAddress(String)
        /// `socket(2)` failed.
        case socket(UVError)
        /// `sendto(2)` to `address` failed (no socket there, queue full, …).
        case send(address: String, UVError)

        /// What went wrong, naming the address or the errno.
        public var description: String {
            switch self {
            case .unsupportedAddress(let address):
                return "NOTIFY_SOCKET '\(address)' is not an absolute path or an @abstract name of at most 107 bytes"
            case .socket(let error): return "cannot open a notification socket: \(error)"
            case .send(let address, let error): return "cannot send to NOTIFY_SOCKET '\(address)': \(error)"
            }
        }
    }

    /// The address as given (`/run/systemd/notify`, `@name`).
    public let address: String
    private let descriptor: Int32
    private let target: sockaddr_un
    private let targetLength: socklen_t

    /// The notifier for `$NOTIFY_SOCKET` in `environment`, or nil when it is
    /// unset or empty (not started by systemd, or not `Type=notify`).
    public static func fromEnvironment(_ environment: [String: String]) throws(Failure) -> ServiceNotifier? {
        guard let address = environment["NOTIFY_SOCKET"], !address.isEmpty else { return nil }
        return try ServiceNotifier(address: address)
    }

    /// Opens a datagram socket for `address`: an absolute path, or `@name`
    /// for an abstract socket (Linux).
    public init(address: String) throws(Failure) {
        self.address = address
        var bytes = Array(address.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        var target = sockaddr_un()
        let capacity = MemoryLayout.size(ofValue: target.sun_path)
        // A path needs its NUL terminator; an abstract name does not.
        guard abstract || bytes.first == UInt8(ascii: "/"), bytes.count >= 2,
              bytes.count < capacity || (abstract && bytes.count <= capacity) else {
            throw .unsupportedAddress(address)
        }
        if abstract { bytes[0] = 0 }
        target.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &target.sun_path) { path in
            path.copyBytes(from: bytes)
        }
        self.target = target
        // An abstract name's length is part of the name: no trailing bytes.
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        targetLength = socklen_t(pathOffset + bytes.count + (abstract ? 0 : 1))
        #if os(Linux)
        let type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #else
        let type = SOCK_DGRAM
        #endif
        let fd = socket(AF_UNIX, type, 0)
        guard fd >= 0 else { throw .socket(UVError(-errno)) }
        descriptor = fd
    }

    deinit {
        close(descriptor)
    }

    /// Sends `fields` as one datagram, one `KEY=VALUE` line each
    /// (`READY=1`, `STATUS=…`).
    public func send(_ fields: [String]) throws(Failure) {
        let message = Array(fields.map { $0 + "\n" }.joined().utf8)
        #if os(Linux)
        let flags = Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)
        #else
        let flags = MSG_DONTWAIT
        #endif
        let sent = withUnsafePointer(to: target) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                message.withUnsafeBytes { body in
                    sendto(descriptor, body.baseAddress, body.count, flags, address, targetLength)
                }
            }
        }
        guard sent >= 0 else { throw .send(address: address, UVError(-errno)) }
    }

    /// `READY=1`: startup (or a reload) is complete; `status` is shown by
    /// `systemctl status`.
    public func ready(status: String? = nil) throws(Failure) {
        try send(["READY=1"] + (status.map { ["STATUS=\($0)"] } ?? []))
    }

    /// `RELOADING=1` with `MONOTONIC_USEC` (the `CLOCK_MONOTONIC` time, which
    /// systemd ≥ 253 requires to match the reload to its request). Follow
    /// it with ``ready(status:)`` once the reload is done.
    public func reloading() throws(Failure) {
        try send(["RELOADING=1", "MONOTONIC_USEC=\(Self.monotonicMicroseconds())"])
    }

    /// `STOPPING=1`: the service has begun to shut down.
    public func stopping(status: String? = nil) throws(Failure) {
        try send(["STOPPING=1"] + (status.map { ["STATUS=\($0)"] } ?? []))
    }

    /// `CLOCK_MONOTONIC` in microseconds, the clock systemd compares.
    public static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }
}
