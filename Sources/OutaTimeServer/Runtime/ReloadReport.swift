import Foundation
import Synchronization

/// What one reload did (``ServerHandle/reload()``, SIGHUP), step by step.
public struct ReloadReport: Sendable, Equatable, CustomStringConvertible {
    /// The tokens file step.
    public var tokens: TokensReload
    /// The TLS certificate step.
    public var tls: TLSReload

    /// A report of the steps' outcomes.
    public init(tokens: TokensReload, tls: TLSReload = .none) {
        self.tokens = tokens
        self.tls = tls
    }

    /// `tokens=… tls=…`, for logs.
    public var description: String { "tokens=\(tokens) tls=\(tls)" }
}

/// What became of the TLS certificate, key and client CAs in a reload.
public enum TLSReload: Sendable, Equatable, CustomStringConvertible {
    /// No TLS listener: nothing to reload.
    case none
    /// Read again from the same files; new connections use them.
    case reloaded
    /// The files could not be used (`message` says why); the previous
    /// certificate stays in force.
    case failed(message: String)

    /// One word, for logs.
    public var description: String {
        switch self {
        case .none: "none"
        case .reloaded: "reloaded"
        case .failed: "failed"
        }
    }
}

/// What became of the tokens file in a reload.
public enum TokensReload: Sendable, Equatable, CustomStringConvertible {
    /// Anonymous mode (no `--tokens`): nothing to reload.
    case anonymous
    /// The tokens were given in ``ServerConfig/tokens``, not read from a
    /// file: nothing to reload.
    case notFromFile
    /// The file was read and is in use: it lists `entries` tokens;
    /// `closed` connections got `bye unauthorized` (token removed, or a
    /// subscription outside the token's new scope); `updated` connections
    /// took their token's new role or scope.
    case reloaded(entries: Int, closed: Int, updated: Int)
    /// The file could not be used (`message` names it and the problem);
    /// the previous tokens stay in force and no connection was touched.
    case failed(message: String)

    /// One word and the counts, for logs.
    public var description: String {
        switch self {
        case .anonymous: "anonymous"
        case .notFromFile: "not_from_file"
        case .reloaded(let entries, let closed, let updated): "reloaded(entries: \(entries), closed: \(closed), updated: \(updated))"
        case .failed: "failed"
        }
    }
}

/// The report of one requested reload, handed from the loop thread to the
/// thread waiting in ``ServerHandle/reload()``.
final class ReloadAnswer: Sendable {
    private let report = Mutex<ReloadReport?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// Hands over the report (loop thread).
    func set(_ value: ReloadReport) {
        report.withLock { $0 = value }
        done.signal()
    }

    /// The report, or nil after `timeout` seconds.
    func wait(timeout: Double) -> ReloadReport? {
        guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        return report.withLock { $0 }
    }
}
