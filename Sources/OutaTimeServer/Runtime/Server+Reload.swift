extension Server {
    /// Reloads what can change without a restart, one step after the
    /// other, each logging what it did: today the tokens file. New
    /// connections use what was reloaded; established ones stay unless a
    /// step says otherwise (``reloadTokens()``). A step that fails logs an
    /// error and keeps what was in force. SIGHUP and ``ServerHandle/reload()``
    /// land here, on the loop thread.
    @discardableResult
    func reload() -> ReloadReport {
        assertOnLoopThread()
        // 1. The tokens file (and the connections whose token changed).
        let tokens = reloadTokens()
        // Further steps (TLS certificates) go here, in the same shape.
        let report = ReloadReport(tokens: tokens)
        logger.notice("reload done", metadata: ["tokens": "\(tokens)"])
        return report
    }
}
