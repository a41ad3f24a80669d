import OutaTimeProtocol
import OutaTimeStore

/// What other threads tell the loop, through its one inbox.
enum ServerMessage: Sendable {
    /// The store writer committed (or failed) these tickets.
    case committed([StoreCommit])
    /// A history read finished.
    case historyRead(ticket: UInt64, Result<[HistoryEvent], StoreFailure>)
    /// SIGINT/SIGTERM or ``ServerHandle/shutdown()``.
    case shutdownRequested
    /// ``ServerHandle/reload()``: reload, then answer with the report.
    case reloadRequested(ReloadAnswer)
}
