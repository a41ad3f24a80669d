import OutaTimeProtocol

extension Server {
    /// The reload step for the tokens file (``reload()``).
    ///
    /// A file that cannot be read or is invalid is logged at error level
    /// (the file and the problem, never a token) and the tokens in force
    /// stay. Otherwise new `hello`s use the new file at once, and each
    /// ready connection is checked against it by the entry it was admitted
    /// with:
    /// - its token (or, for a connection admitted by its client certificate,
    ///   its `certificate_subject` entry) is gone: `error` push
    ///   `unauthorized`, `bye unauthorized`;
    /// - its entry's role or scope changed: the connection takes the new
    ///   role and scope for its next requests, unless it is subscribed to a
    ///   channel the new scope excludes: then it is closed as above (its
    ///   access to what it is watching was withdrawn);
    /// - only the name changed: nothing now; the display name others see
    ///   stays until the client reconnects (presence already announced it).
    func reloadTokens() -> TokensReload {
        guard let path = config.tokensFile else {
            if tokens == nil {
                logger.notice("reload: no tokens file (anonymous mode), nothing to reload")
                return .anonymous
            }
            logger.notice("reload: the tokens were not read from a file, nothing to reload")
            return .notFromFile
        }
        let table: TokenTable
        do {
            table = try TokenTable.load(from: path)
            try config.checkCertificateEntries(table, file: path)
        } catch {
            logger.error("reload: tokens file not reloaded, the previous tokens stay in force",
                         metadata: ["file": "\(path)", "problem": "\(error.message)"])
            return .failed(message: error.message)
        }
        tokens = table
        var closed = 0
        var updated = 0
        for session in Array(connections.values) where session.state.isReady {
            guard let old = session.credential else { continue }
            guard let new = table.entry(sameKeyAs: old) else {
                revoke(session, "the server's tokens file was reloaded and this connection's "
                    + (old.key.isCertificateSubject ? "certificate subject" : "token") + " is no longer listed")
                closed += 1
                continue
            }
            session.credential = new
            guard new.role != old.role || new.scope != old.scope else { continue }
            if let excluded = session.subscribed.first(where: { key in
                (try? ChannelName.parse(key)).map { !new.scope.allows($0) } ?? true
            }) {
                revoke(session, "the server's tokens file was reloaded and this connection's token "
                    + "('\(new.name)') no longer covers '\(excluded)'; its channels are now: \(new.scope)")
                closed += 1
                continue
            }
            session.role = new.role  // the scope comes with `credential`
            updated += 1
        }
        logger.notice("reload: tokens file reloaded", metadata: [
            "file": "\(path)", "entries": "\(table.entries.count)",
            "connections.closed": "\(closed)", "connections.updated": "\(updated)",
        ])
        return .reloaded(entries: table.entries.count, closed: closed, updated: updated)
    }

    /// Ends a connection whose token no longer admits it: an `error` push
    /// `unauthorized` saying why, then `bye unauthorized`.
    private func revoke(_ session: Connection, _ why: String) {
        logger.info("closing connection: token withdrawn by reload",
                    metadata: ["conn.id": "\(session.id)", "name": "\(session.displayName)"])
        session.send(ErrorPush(error: ProtocolError(.unauthorized, why)))
        session.close(bye: .unauthorized)
    }
}
