import Foundation
import OutaTimeDomain
import OutaTimeProtocol

/// The owner's side of forwarding (docs/CLUSTER.md §4.4): a request another
/// node forwarded runs here as its own connection's would, for a caller
/// known by session id, name and role; the answer carries the frame body
/// its client gets. Its watchers are kept here with the node that holds
/// them, so presence and the timers' viewers are exact across nodes.
extension Server {
    /// Who a forwarded request comes from.
    struct RemoteCaller {
        let node: String
        let request: ClusterRequestID
        let session: String
        let name: String
        let role: Role

        var watcher: Watcher { Watcher(session: session, name: name) }
    }

    func serveForwarded(_ received: ClusterRequest, _ cluster: ClusterNode) {
        guard let (header, request) = ForwardedRequest.decode(received.payload) else {
            logger.warning("unreadable forwarded request", metadata: ["from": "\(received.from)"])
            return
        }
        cluster.counters.forwardedServed += 1
        let caller = RemoteCaller(node: received.from, request: received.id, session: header.session, name: header.name,
                                  role: header.role)
        if header.op == .resync {
            // An owner had dropped this node's watchers of these channels.
            for key in header.channels ?? [] {
                if let relay = cluster.relays[key], relay.owner == received.from { rejoin(relay, announce: true, cluster) }
            }
            answerForwarded(received.id, seq: nil, body: [])
            return
        }
        if header.op == .leave {
            for key in header.channels ?? [] { remoteLeave(caller, key, cluster) }
            answerForwarded(received.id, seq: nil, body: [])
            return
        }
        guard let request else { return }
        runForwarded(header, request, caller, cluster)
    }

    /// Runs (or runs again, once its channel is ready) a forwarded request.
    private func runForwarded(_ header: ForwardedRequest, _ request: Request, _ caller: RemoteCaller, _ cluster: ClusterNode) {
        do throws(ProtocolError) {
            let name = try request.channel()
            let key = name.description
            guard servesLocally(key), cluster.fabric.mayOwn else {
                answer(caller, ForwardedAnswer(moved: true), body: [])
                return
            }
            // Runs the request again once its channel is ready, or answers the failure that ended the wait.
            let retry: (ProtocolError?) -> Void = { [unowned self] failure in
                if let failure {
                    self.answerFailure(caller, request, failure)
                } else {
                    self.runForwarded(header, request, caller, cluster)
                }
            }
            switch header.op {
            case .subscribe:
                try remoteSubscribe(request, name, caller, rejoin: header.rejoin == true && header.announce != true, cluster, retry: retry)
            case .unsubscribe:
                remoteLeave(caller, key, cluster)
                answer(caller, ForwardedAnswer(), body: replyBody(request.id, EmptyResult()))
            case .get:
                let channel = try channelToRead(name, caller)
                guard channel.pipeline.isSettled else { return channel.settleCallbacks.append(retry) }
                answer(caller, ForwardedAnswer(), body: replyBody(request.id, GetReply(
                    channel: key, kind: name.kind, seq: channel.seq, state: wireStateForRemote(channel))))
            case .history: try remoteHistory(request, name, caller, retry: retry)
            case .command: try remoteCommand(request, name, caller, cluster, retry: retry)
            case .publish:
                guard let data = request.value("data") else {
                    throw ProtocolError(.invalidRequest, "field 'data' is required (any JSON value)")
                }
                guard caller.role >= .operate else {
                    throw ProtocolError(.forbidden, "'publish' needs role operate or higher; this connection has role \(caller.role.rawValue)")
                }
                counters.messagesPublished += 1
                let local = broadcastMessage(MessagePush(channel: key, from: caller.watcher, data: data), to: key)
                answer(caller, ForwardedAnswer(), body: replyBody(request.id, PublishResult(delivered: local + cluster.remoteCount(of: key))))
            case .leave, .resync:
                break
            }
        } catch {
            answerFailure(caller, request, error)
        }
    }

    /// A failed forwarded request: `unavailable` (nothing was changed: the
    /// channel moved, or could not be read) makes the forwarding node send
    /// it again to the owner of the moment; any other error is the reply.
    private func answerFailure(_ caller: RemoteCaller, _ request: Request, _ error: ProtocolError) {
        if error.code == .unavailable {
            answer(caller, ForwardedAnswer(moved: true), body: [])
        } else {
            answer(caller, ForwardedAnswer(push: request.id == nil ? true : nil), body: failureBody(id: request.id, error))
        }
    }

    private func remoteSubscribe(_ request: Request, _ name: ChannelName, _ caller: RemoteCaller, rejoin: Bool,
                                 _ cluster: ClusterNode, retry: @escaping (ProtocolError?) -> Void) throws(ProtocolError) {
        let key = name.description
        let since = try request.optionalInt("since", in: 0...Self.maxSeq)
        let channel = try channelToRead(name, caller)
        guard channel.pipeline.isSettled else { return channel.settleCallbacks.append(retry) }
        logger.debug("cluster: remote watcher", metadata: ["channel": "\(key)", "node": "\(caller.node)", "rejoin": "\(rejoin)",
                                                           "since": "\(since ?? -1)", "seq": "\(channel.seq)"])
        if cluster.remote[key]?[caller.session] == nil {
            cluster.remote[key, default: [:]][caller.session] = RemoteWatcher(watcher: caller.watcher, node: caller.node)
            cluster.remoteByNode[caller.node, default: []].insert(RemoteMembership(channel: key, session: caller.session))
            if !rejoin { broadcastPresence(channel: key, joined: [caller.watcher], left: [], except: nil, exceptRemote: caller.session) }
        }
        let seq = channel.seq
        let recoverable = Int64(min(config.historyLimit, FrameBounds.maxRecoveredEvents))
        let result = { [unowned self] (recovered: Bool?, events: [HistoryEvent]?) in
            SubscribeReply(channel: key, kind: name.kind, seq: seq,
                           watchers: self.watcherList(of: key, limit: self.config.presenceLimit),
                           watcherCount: self.watcherCount(of: key),
                           state: recovered == true ? nil : self.wireStateForRemote(channel),
                           recovered: recovered, events: events)
        }
        guard let since, since < seq, seq - since <= recoverable else {
            let recovered = since.map { $0 == seq }
            answer(caller, ForwardedAnswer(seq: seq, joined: true),
                   body: replyBody(request.id, result(recovered, recovered == true ? [] : nil)))
            return
        }
        readHistory(channel: key, after: since, through: seq, limit: Int(seq - since)) { [unowned self] read in
            let events = (try? read.get()) ?? []
            let complete = events.count == Int(seq - since) && events.first?.seq == since + 1 && events.last?.seq == seq
            self.answer(caller, ForwardedAnswer(seq: seq, joined: true),
                        body: self.replyBody(request.id, result(complete, complete ? events : nil)))
        }
    }

    private func remoteHistory(_ request: Request, _ name: ChannelName, _ caller: RemoteCaller,
                               retry: @escaping (ProtocolError?) -> Void) throws(ProtocolError) {
        let key = name.description
        let after = try request.optionalInt("after", in: 0...Self.maxSeq) ?? 0
        let limit = try request.optionalInt("limit", in: 1...1000) ?? 100
        if mustLoadBeforeReading(key) {
            // Perhaps stored but not loaded yet: load it (not created), then answer.
            return try openChannel(name, creator: nil, who: "", create: false).settleCallbacks.append(retry)
        }
        guard let channel = channels[key], channel.pipeline.isDurable else {
            answer(caller, ForwardedAnswer(), body: replyBody(request.id, HistoryResult(channel: key, seq: 0, events: [])))
            return
        }
        guard channel.pipeline.isSettled else { return channel.settleCallbacks.append(retry) }
        let seq = channel.seq
        guard after < seq else {
            answer(caller, ForwardedAnswer(), body: replyBody(request.id, HistoryResult(channel: key, seq: seq, events: [])))
            return
        }
        readHistory(channel: key, after: max(after, historyStart(of: channel)), through: seq, limit: Int(limit)) { [unowned self] read in
            switch read {
            case .success(let events):
                self.answer(caller, ForwardedAnswer(), body: self.replyBody(request.id, HistoryResult(channel: key, seq: seq, events: events)))
            case .failure(let failure):
                self.answer(caller, ForwardedAnswer(), body: self.failureBody(id: request.id, ProtocolError(.internal,
                    "could not read the history of '\(key)': \(failure)")))
            }
        }
    }

    private func remoteCommand(_ request: Request, _ name: ChannelName, _ caller: RemoteCaller, _ cluster: ClusterNode,
                               retry: @escaping (ProtocolError?) -> Void) throws(ProtocolError) {
        let key = name.description
        let action = try request.string("action")
        let args = ActionArgs(try request.optionalObject("args") ?? [:])
        var idempotencyKey = try Self.idempotencyKey(of: request)
        let kind = name.kind.behaviour
        // Viewing (timers `start`/`stop`) belongs to the connection and
        // ends with it: run again on a new connection, it must apply.
        let viewing = kind.viewerActions.contains(action)
        if viewing { idempotencyKey = nil }
        guard let access = kind.actions[action] else { throw kind.unknownAction(action) }
        if access == .mutating && caller.role < .operate {
            throw ProtocolError(.forbidden,
                "action '\(action)' changes the channel and needs role operate; this connection has role \(caller.role.rawValue)")
        }
        if viewing, cluster.remote[key]?[caller.session] == nil {
            throw ProtocolError(.notSubscribed,
                "'\(action)' works on this connection's views of '\(name)', which needs a subscription: subscribe to '\(name)' first")
        }
        let channel = try channelToRead(name, caller)
        guard channel.pipeline.isDurable else { return channel.settleCallbacks.append(retry) }
        counters.commands += 1
        if let idempotencyKey, channels[key] === channel,
           try answerRepeat(of: idempotencyKey, action: action, on: channel, id: request.id,
                            target: { .remote(caller.request) }) != nil {
            return
        }
        let context = ActionContext(now: clock.now, session: caller.session, actor: caller.name, itemLimit: itemLimit)
        let outcome: ActionOutcome
        do throws(ProtocolError) {
            outcome = try channel.state.perform(action, args, context)
        } catch {
            if error.code == .channelFull { counters.channelItemsRefused += 1 }
            throw error
        }
        guard !outcome.events.isEmpty, channels[key] === channel else {
            if channels[key] === channel { replanClock(channel) }
            answer(caller, ForwardedAnswer(), body: replyBody(id: request.id, outcome: outcome))
            return
        }
        var reply = PendingReply(target: .remote(caller.request), id: request.id, outcome: outcome,
                                 lastSeq: channel.seq + Int64(outcome.events.count))
        if let idempotencyKey {
            reply.keyed = rememberKeyed(idempotencyKey, action: action, outcome: outcome, on: channel, at: context.now)
        }
        commit(outcome.events, on: channel, at: context.now, reply: reply)
    }

    /// A remote session left `key`.
    private func remoteLeave(_ caller: RemoteCaller, _ key: String, _ cluster: ClusterNode) {
        guard let watcher = cluster.remote[key]?.removeValue(forKey: caller.session) else { return }
        if cluster.remote[key]?.isEmpty == true { cluster.remote[key] = nil }
        cluster.remoteByNode[watcher.node]?.remove(RemoteMembership(channel: key, session: caller.session))
        broadcastPresence(channel: key, joined: [], left: [watcher.watcher], except: nil)
        releaseRemote(session: caller.session, from: key)
    }

    /// The channel a forwarded read or command names: created on first
    /// use unless the caller's role is `watch` (then a stand-in).
    private func channelToRead(_ name: ChannelName, _ caller: RemoteCaller) throws(ProtocolError) -> Channel {
        if caller.role < .operate, channels[name.description] == nil, !mustLoadBeforeReading(name.description) {
            return unstoredChannel(name)
        }
        return try openChannel(name, creator: nil, who: "session '\(caller.session)'", create: caller.role >= .operate)
    }

    private func wireStateForRemote(_ channel: Channel) -> RawJSON {
        (try? RawJSON(encoding: channel.state.wireState(at: clock.now))) ?? RawJSON(validJSON: "{}")
    }

    private func answer(_ caller: RemoteCaller, _ header: ForwardedAnswer, body: [UInt8]) {
        cluster?.fabric.answer(caller.request, payload: header.encoded(body: body))
    }

    /// Answers a forwarded command once its events are committed (``PendingReply``).
    func answerForwarded(_ request: ClusterRequestID, seq: Int64?, body: [UInt8]) {
        answerForwarded(request, header: ForwardedAnswer(seq: seq), body: body)
    }

    func answerForwarded(_ request: ClusterRequestID, header: ForwardedAnswer, body: [UInt8]) {
        cluster?.fabric.answer(request, payload: header.encoded(body: body))
    }

    /// The reply frame body for request `id` (empty without an id: nothing is sent).
    func replyBody<Result: Encodable>(_ id: RequestID?, _ result: Result) -> [UInt8] {
        guard let id, let frame = try? encoder.frame(ReplyOK(id: id, result: result)) else { return [] }
        return Array(frame.body)
    }

    /// A command's reply body, written the way a local reply is.
    func replyBody(id: RequestID?, outcome: ActionOutcome) -> [UInt8] {
        guard let id else { return [] }
        if let writable = outcome.writableReply, let frame = try? encoder.replyFrame(id: id, result: writable) {
            return Array(frame.body)
        }
        return replyBody(id, AnyEncodableResult(outcome.reply))
    }

    /// An error reply's body, or an `error` push's without an id.
    func failureBody(id: RequestID?, _ error: ProtocolError) -> [UInt8] {
        let frame = id.map { try? encoder.frame(ReplyError(id: $0, error: error)) } ?? (try? encoder.frame(ErrorPush(error: error)))
        return frame.map { Array($0.body) } ?? []
    }
}

/// An existential result, encodable as itself.
private struct AnyEncodableResult: Encodable {
    let value: any Encodable
    init(_ value: any Encodable) { self.value = value }
    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}
