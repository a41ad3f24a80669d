import OutaTimeProtocol
import UV

/// Subscriptions and their mirrors: subscribe, unsubscribe, pushes, and the
/// `since` resubscriptions after a reconnect or a seq gap.
extension OutaTimeConnection {
    /// Subscribes to `channel` and keeps a ``ChannelMirror`` of it, restored
    /// with `since` after every reconnect. `completion` runs once, when the
    /// mirror first has the channel's state, or with the server's refusal
    /// (`invalid_channel`, `unknown_kind`, …), after which there is no
    /// mirror. A `server_busy` (or `internal`) refusal is not final: the
    /// subscription is sent again with the next heartbeat. Subscribing again
    /// to a mirrored channel only waits for (or returns) the mirror, unless
    /// `messages` changed: then the subscription is sent again with it.
    /// With `messages: false` the server sends no `message` pushes of the
    /// channel (protocol §6.3), also after reconnects.
    public func subscribe(_ channel: String, messages: Bool = true,
                          completion: ((Result<ChannelMirror, ClientError>) -> Void)? = nil) {
        if case .closed(let reason) = state {
            completion?(.failure(.closed(reason)))
            return
        }
        let changed = messages ? channelsWithoutMessages.remove(channel) != nil
                               : channelsWithoutMessages.insert(channel).inserted
        if changed, mirrors[channel] != nil { sendSubscribe(channel) }
        if let mirror = mirrors[channel], mirror.isSynced {
            completion?(.success(mirror))
            return
        }
        if let completion { subscribeWaiters[channel, default: []].append(completion) }
        guard mirrors[channel] == nil else { return }
        mirrors[channel] = ChannelMirror(channel: channel)
        sendSubscribe(channel)
    }

    /// Drops the mirror of `channel` and unsubscribes on the server. A
    /// subscription still being made fails with ``ClientError/cancelled``.
    /// `completion` gets the `unsubscribe` reply, or success at once when
    /// not connected (the next connection will not subscribe it).
    public func unsubscribe(_ channel: String, completion: ((Result<Void, ClientError>) -> Void)? = nil) {
        mirrors[channel] = nil
        latestSubscribe[channel] = nil
        channelsWithoutMessages.remove(channel)
        let waiters = subscribeWaiters.removeValue(forKey: channel) ?? []
        for waiter in waiters { waiter(.failure(.cancelled)) }
        guard isReady else {
            completion?(.success(()))
            return
        }
        request("unsubscribe", fields: ["channel": .string(channel)]) { result in
            completion?(result.map { _ in () })
        }
    }

    /// Error codes that refuse a `subscribe` only for now (§10: `server_busy`
    /// means retry after a short pause): the mirror stays and is retried.
    static let transientCodes: Set<String> = [ErrorCode.serverBusy.rawValue, ErrorCode.internal.rawValue]

    /// Subscribes every mirror again on a fresh connection, with `since`
    /// where the mirror has a state to apply missed events to.
    func restoreSubscriptions() {
        retrySubscriptions = []
        for channel in mirrors.keys.sorted() { sendSubscribe(channel) }
    }

    /// Sends the subscriptions refused for now again (called by the heartbeat).
    func retryRefusedSubscriptions() {
        let channels = retrySubscriptions.sorted()
        retrySubscriptions = []
        for channel in channels where mirrors[channel] != nil { sendSubscribe(channel) }
    }

    /// Sends `subscribe` for the mirror of `channel` (with `since` unless
    /// `resume` is false); its events are held until the result is in.
    func sendSubscribe(_ channel: String, resume: Bool = true) {
        guard isReady, var mirror = mirrors[channel] else { return }
        mirror.beginSync()
        mirrors[channel] = mirror
        var fields: [String: JSONValue] = ["channel": .string(channel)]
        let since = resume ? mirror.resumeSeq : nil
        if let since { fields["since"] = .int(since) }
        if channelsWithoutMessages.contains(channel) { fields["messages"] = .bool(false) }
        subscribeSerial += 1
        let token = subscribeSerial
        latestSubscribe[channel] = token
        internalRequest("subscribe", fields: fields) { [self] result in
            subscribeAnswered(channel, token: token, result)
        }
    }

    private func subscribeAnswered(_ channel: String, token: Int, _ outcome: Result<JSONValue, ClientError>) {
        // Unsubscribed meanwhile, or superseded by a later subscribe.
        guard latestSubscribe[channel] == token, var mirror = mirrors[channel] else { return }
        let json: JSONValue
        switch outcome {
        case .success(let value):
            json = value
        case .failure(.server(let refusal)) where Self.transientCodes.contains(refusal.code):
            // Retried with the next heartbeat; held events are recovered then.
            _ = mirror.endSync()
            mirrors[channel] = mirror
            retrySubscriptions.insert(channel)
            return
        case .failure(let error):
            if case .server = error {
                mirrors[channel] = nil
                latestSubscribe[channel] = nil
                let waiters = subscribeWaiters.removeValue(forKey: channel) ?? []
                for waiter in waiters { waiter(.failure(error)) }
                onSubscriptionFailed?(channel, error)
            }
            return  // a lost connection: the next one subscribes again
        }
        let result: SubscribeResult
        do {
            result = try json.decode(SubscribeResult.self)
        } catch {
            drop(.protocolViolation("subscribe result for \(channel): \(error)"))
            return
        }
        guard let (sync, recovered) = mirror.sync(with: result) else {
            // The recovered events do not continue the mirror: take a full state.
            sendSubscribe(channel, resume: false)
            return
        }
        count(sync, events: recovered.count)
        let held = mirror.endSync()
        mirrors[channel] = mirror
        for event in recovered { onEvent?(event) }
        onSync?(sync)
        for event in held { received(event) }
        if let synced = mirrors[channel], synced.isSynced {
            let waiters = subscribeWaiters.removeValue(forKey: channel) ?? []
            for waiter in waiters { waiter(.success(synced)) }
        }
    }

    private func count(_ sync: ChannelSync, events: Int) {
        switch sync.method {
        case .snapshot: stats.snapshots += 1
        case .reloaded: stats.reloads += 1
        case .recovered: stats.recoveries += 1
        }
        stats.recoveredEvents += events
        stats.eventsApplied += events
    }

    /// An `event` push (or one held during a sync): applied in seq order;
    /// a gap asks for the missed events with `since`.
    func received(_ event: ChannelEvent) {
        guard var mirror = mirrors[event.channel] else {
            onEvent?(event)
            return
        }
        let disposition = mirror.apply(event)
        mirrors[event.channel] = mirror
        switch disposition {
        case .applied:
            stats.eventsApplied += 1
            onEvent?(event)
        case .stale:
            stats.staleEvents += 1
        case .held:
            break
        case .gap:
            stats.gaps += 1
            sendSubscribe(event.channel)
        }
    }

    /// Routes one decoded frame.
    func dispatch(_ frame: IncomingFrame, on link: Link) {
        switch frame {
        case .reply(let id, let result):
            replied(id, result)
        case .push(.event(let push)):
            stats.eventsReceived += 1
            received(ChannelEvent(push))
        case .push(.tick(let tick)):
            mirrors[tick.channel]?.record(tick)
            onTick?(tick)
        case .push(.message(let message)):
            onMessage?(message)
        case .push(.dropped(let dropped)):
            onDropped?(dropped)
        case .push(.presence(let presence)):
            mirrors[presence.channel]?.record(presence)
            onPresence?(presence)
        case .push(.error(let push)):
            onServerError?(ServerError(push.error))
        case .errorWithNewCode(let error):
            onServerError?(error)
        case .push(.bye(let push)):
            drop(.bye(push.reason))
        case .push(.unknown):
            break
        case .malformed(let what):
            drop(.protocolViolation(what))
        }
    }
}
