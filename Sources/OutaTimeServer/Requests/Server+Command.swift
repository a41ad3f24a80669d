import Foundation
import OutaTimeDomain
import OutaTimeProtocol

extension Server {
    /// `command`: runs a kind's action on the channel. A read-only action
    /// (or one that changes nothing) replies at once. A state-changing one
    /// is applied now and its events join the next group commit; its reply
    /// waits for that commit, after the events' broadcast (the issuer sees
    /// its `event` before its `reply`), while the connection's next
    /// requests run (protocol §17, "Pipelining").
    func command(_ request: Request, on session: Connection) throws(ProtocolError) -> Handled {
        let name = try scopedChannel(request, for: session)
        let action = try request.string("action")
        let args = ActionArgs(try request.optionalObject("args") ?? [:])
        var idempotencyKey = try Self.idempotencyKey(of: request)
        let kind = name.kind.behaviour
        // Viewing (timers `start`/`stop`) belongs to the connection and
        // ends with it: run again on a new connection, it must apply.
        let viewing = kind.viewerActions.contains(action)
        if viewing { idempotencyKey = nil }
        guard let access = kind.actions[action] else { throw kind.unknownAction(action) }
        if access == .mutating && session.role < .operate {
            throw ProtocolError(.forbidden,
                "action '\(action)' changes the channel and needs role operate; this connection has role \(session.role.rawValue)")
        }
        if viewing, !subscriptions.isSubscribed(session, to: name.description) {
            throw ProtocolError(.notSubscribed,
                "'\(action)' works on this connection's views of '\(name)', which needs a subscription: subscribe to '\(name)' first")
        }
        // A `watch` connection's read-only action on a channel that does
        // not exist runs on its stand-in (``channelToRead(_:for:)``).
        let channel = try channelToRead(name, for: session)
        guard channel.pipeline.isDurable else { return .retry(channel) }
        counters.commands += 1
        if let idempotencyKey {
            // A repeat is answered with the first outcome; nothing is applied.
            switch try answerRepeat(of: idempotencyKey, action: action, on: channel, id: request.id,
                                    target: { .local(session, session.reserveReply()) }) {
            case .replied: return .replied
            case .waiting: return .pending
            case nil: break
            }
        }

        let context = ActionContext(now: clock.now, session: session.id, actor: session.displayName,
                                    itemLimit: itemLimit)
        let outcome: ActionOutcome
        do throws(ProtocolError) {
            outcome = try channel.state.perform(action, args, context)
        } catch {
            if error.code == .channelFull { counters.channelItemsRefused += 1 }
            throw error
        }
        if session.role < .operate, channels[channel.key] !== channel {
            // A stand-in (read-only, so no events): nothing to keep. Only
            // a watch connection can have one: no extra lookup on the
            // operators' hot path.
            session.reply(request.id, outcome.reply)
            return .replied
        }
        guard !outcome.events.isEmpty else {
            replanClock(channel)
            session.reply(request.id, outcome.reply)
            return .replied
        }
        var reply = PendingReply(target: .local(session, session.reserveReply()), id: request.id, outcome: outcome,
                                 lastSeq: channel.seq + Int64(outcome.events.count))
        if let idempotencyKey {
            reply.keyed = rememberKeyed(idempotencyKey, action: action, outcome: outcome, on: channel, at: context.now)
        }
        commit(outcome.events, on: channel, at: context.now, reply: reply)
        return .pending
    }

    /// ``ServerConfig/maxChannelItems``, as the kinds see it.
    var itemLimit: ItemLimit { ItemLimit(maximum: config.maxChannelItems, setting: "--max-channel-items") }
}
