import CLibUV

/// A libuv result code below zero, wrapped once so callers see a Swift error.
public struct UVError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The negative libuv error code (e.g. `UV_EADDRINUSE`).
    public let code: Int32

    /// Wraps a libuv error code.
    public init(_ code: Int32) { self.code = code }

    /// The symbolic name, e.g. `EADDRINUSE`.
    public var name: String { String(cString: uv_err_name(code)) }

    /// libuv's explanation alone, e.g. `address already in use`.
    public var message: String { String(cString: uv_strerror(code)) }

    /// `ECONNRESET`-style name followed by libuv's explanation.
    public var description: String { "\(name): \(String(cString: uv_strerror(code)))" }

    /// The end of a stream (`UV_EOF`).
    public var isEOF: Bool { code == Int32(UV_EOF.rawValue) }

    /// The kernel gave the connection up (`ETIMEDOUT`): keepalive probes or
    /// sent data went unacknowledged (``TCPLiveness``).
    public var isTimedOut: Bool { code == Int32(UV_ETIMEDOUT.rawValue) }

    /// Throws when `result` is a libuv error (below zero).
    @inline(__always)
    static func check(_ result: Int32) throws(UVError) {
        if result < 0 { throw UVError(result) }
    }

    /// The end-of-stream error.
    public static let eof = UVError(Int32(UV_EOF.rawValue))
}
