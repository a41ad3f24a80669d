import Logging

extension Server {
    /// Failed hellos logged per ``failedHelloLogWindowMs``; more are only
    /// counted (the next line logged says how many were dropped).
    static let failedHelloLogLimit = 10
    /// The window of ``failedHelloLogLimit``.
    static let failedHelloLogWindowMs: UInt64 = 10_000

    /// Logs a `hello` refused for its token at `notice`, with the peer's
    /// address (what an operator, or fail2ban, acts on), the names the
    /// client gave (quoted by the log handler) and why, never the token;
    /// rate-limited (``failedHelloLog``) so that guessing cannot flood the log.
    func logFailedHello(on session: Connection, problem: String, client: String?, name: String?) {
        guard let dropped = failedHelloLog.admit(now: time.now) else { return }
        var metadata: Logger.Metadata = [
            "conn.id": "\(session.id)", "peer": "\(session.peerHost ?? "-")", "problem": "\(problem)",
        ]
        if let client { metadata["client"] = "\(client)" }
        if let name { metadata["name"] = "\(name)" }
        if dropped > 0 { metadata["dropped"] = "\(dropped)" }
        logger.notice("hello refused", metadata: metadata)
    }
}
