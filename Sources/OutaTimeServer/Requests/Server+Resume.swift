import OutaTimeProtocol

extension Server {
    /// `hello` `resume`: closes the ready connection that holds the key
    /// with `bye` `replaced` — its subscriptions end now (presence `left`,
    /// countdowns it alone viewed stop), before the new connection's `hello`
    /// is answered. A key that names no open connection of this process
    /// (unknown, closed since, malformed, another node's) changes nothing.
    func replace(resumedBy text: String, on session: Connection) {
        guard let key = ResumeKey(text: text), key.serial != session.serial,
              let old = connections[key.serial], old.state.isReady, old.resumeSecret == key.secret else { return }
        logger.debug("session replaced by a resuming connection",
                     metadata: ["conn.id": "\(old.id)", "by": "\(session.id)"])
        old.close(bye: .replaced)
    }
}
