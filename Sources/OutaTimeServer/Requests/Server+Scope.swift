import OutaTimeProtocol

extension Server {
    /// The request's `channel`, checked against the connection's scope (its
    /// token's `channels`): every request that names a channel gets it here.
    /// Outside the scope the answer is `forbidden`, whether the channel
    /// exists or not, so a scoped token learns nothing of other channels.
    func scopedChannel(_ request: Request, for session: Session) throws(ProtocolError) -> ChannelName {
        let name = try request.channel()
        guard session.scope.allows(name) else {
            throw ProtocolError(.forbidden,
                "channel '\(name)' is outside this connection's scope: its token "
                + "('\(session.credential?.name ?? "?")') may name only \(session.scope)")
        }
        return name
    }
}
