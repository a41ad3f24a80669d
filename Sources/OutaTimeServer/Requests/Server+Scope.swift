import OutaTimeProtocol

extension Server {
    /// The request's `channel`, checked against the connection's scope (its
    /// token's `channels`): every request that names a channel gets it here.
    /// Outside the scope the answer is `forbidden`, whether the channel
    /// exists or not, so a scoped token learns nothing of other channels.
    func scopedChannel(_ request: Request, for session: Connection) throws(ProtocolError) -> ChannelName {
        // The same text as the connection's last channel is the same name:
        // no parse (about 1,800 instructions a command under callgrind).
        let name: ChannelName
        if let last = session.lastChannel, case .string(let text)? = request.value("channel"), text == last.description {
            name = last
        } else {
            name = try request.channel()
            session.lastChannel = name
        }
        guard session.scope.allows(name) else {
            throw ProtocolError(.forbidden,
                "channel '\(name)' is outside this connection's scope: its token "
                + "('\(session.credential?.name ?? "?")') may name only \(session.scope)")
        }
        return name
    }
}
