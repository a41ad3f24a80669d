extension Server {
    /// Reloads what can change without a restart, one step after the
    /// other, each logging what it did: the tokens file, then the TLS
    /// certificate, key and client CAs. New
    /// connections use what was reloaded; established ones stay unless a
    /// step says otherwise (``reloadTokens()``). A step that fails logs an
    /// error and keeps what was in force. SIGHUP and ``ServerHandle/reload()``
    /// land here, on the loop thread.
    @discardableResult
    func reload() -> ReloadReport {
        assertOnLoopThread()
        // 1. The tokens file (and the connections whose token changed).
        let tokens = reloadTokens()
        // 2. The TLS files, for new connections (``reloadTLS(_:)``).
        let tls: TLSReload
        if tlsFiles == nil {
            tls = .none
        } else {
            do {
                try reloadTLS()
                tls = .reloaded
            } catch {
                tls = .failed(message: error.message)
            }
        }
        warnAboutExposedSecretFiles("reload")
        let report = ReloadReport(tokens: tokens, tls: tls)
        logger.notice("reload done", metadata: ["tokens": "\(tokens)", "tls": "\(tls)"])
        return report
    }
}
