import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeStore

/// Commands safe to retry (protocol §6.9, `idempotency_key`): a command
/// may carry a key of the client's choosing; once it produced a durable
/// event, a repeat of the key on the same channel (from any connection) is
/// answered with the first outcome and applies nothing.
extension Server {
    /// What became of a keyed command that was seen before.
    enum RepeatAnswer {
        /// Answered with the first outcome (its reply is queued).
        case replied
        /// The first is still committing: the repeat is answered with it.
        case waiting
    }

    /// A command's `idempotency_key`, checked: nil when absent.
    ///
    /// - Throws: `invalid_request` naming the value and what is allowed.
    static func idempotencyKey(of request: Request) throws(ProtocolError) -> String? {
        guard let key = try request.optionalString("idempotency_key") else { return nil }
        guard (1...64).contains(key.unicodeScalars.count),
              key.unicodeScalars.allSatisfy({ $0.isASCII && Self.idempotencyKeyCharacters.contains(UInt8($0.value)) })
        else {
            let shown = key.unicodeScalars.count > 80 ? String(key.prefix(80)) + "…" : key
            throw ProtocolError(.invalidRequest,
                "field 'idempotency_key' must be 1…64 characters of A–Z a–z 0–9 . _ - : (a UUID fits), got "
                    + "\(JSONValue.string(shown).errorDescription), \(key.unicodeScalars.count) characters")
        }
        return key
    }

    /// The bytes allowed in an `idempotency_key`.
    private static let idempotencyKeyCharacters: Set<UInt8> = Set(
        Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-:".utf8))

    /// Answers a repeat of `key` on `channel` with the first command's
    /// outcome, or sets it waiting for the first one's commit; nil when
    /// the key is new (or forgotten: past the bounds). `target` is asked
    /// only for a repeat (a local reply reserves its slot then).
    ///
    /// - Throws: `conflict` when the key was used by another action.
    func answerRepeat(of key: String, action: String, on channel: Channel, id: RequestID?,
                      target: () -> PendingReply.Target) throws(ProtocolError) -> RepeatAnswer? {
        guard let entry = channel.commandKeys.lookup(key, channelSeq: channel.seq, historyLimit: config.historyLimit,
                                                     window: idempotencyWindow, now: clock.now)
        else { return nil }
        guard entry.action == action else {
            throw ProtocolError(.conflict,
                "idempotency_key '\(key)' was used on '\(channel.key)' for action '\(entry.action)' (seq \(entry.seq)), "
                    + "not '\(action)': nothing was applied; give each command a key of its own")
        }
        switch entry.outcome {
        case .committed(let result):
            sendKeyedReply(to: target(), id: id, result: result, seq: entry.seq, repeated: true)
            return .replied
        case .committing:
            channel.commandKeys.wait(CommandKeys.Repeat(target: target(), id: id), for: key)
            return .waiting
        }
    }

    /// Remembers a keyed command whose events were just applied: its reply
    /// (returned, to wait for the commit) carries the key, and the commit
    /// stores the key with the event. Nil when the result cannot be
    /// encoded (never for the kinds' results): the command is then not
    /// remembered.
    func rememberKeyed(_ key: String, action: String, outcome: ActionOutcome, on channel: Channel,
                       at time: Date) -> PendingReply.Keyed? {
        let result: RawJSON
        do {
            if let writable = outcome.writableReply {
                result = try RawJSON(writing: writable)
            } else {
                result = try RawJSON(encoding: outcome.reply)
            }
        } catch {
            return nil
        }
        channel.commandKeys.remember(key, seq: channel.seq + Int64(outcome.events.count), action: action, at: time,
                                     historyLimit: config.historyLimit, window: idempotencyWindow)
        return PendingReply.Keyed(key: key, action: action, result: result)
    }

    /// A keyed command's events are committed: remembered for good, and
    /// the repeats that waited are answered.
    func keyedCommitted(_ keyed: PendingReply.Keyed, seq: Int64, on channel: Channel) {
        for waiting in channel.commandKeys.committed(keyed.key, result: keyed.keptResult) {
            sendKeyedReply(to: waiting.target, id: waiting.id, result: keyed.result, seq: seq, repeated: true)
        }
    }

    /// A keyed command's commit failed: forgotten (nothing was applied),
    /// and the repeats that waited fail alike.
    func keyedFailed(_ keyed: PendingReply.Keyed, on channel: Channel, error: ProtocolError) {
        for waiting in channel.commandKeys.failed(keyed.key) {
            PendingReply(target: waiting.target, id: waiting.id, outcome: ActionOutcome(), lastSeq: 0)
                .fail(error, on: self)
        }
    }

    /// The reply to a keyed command: the result, `seq`, and `repeated`.
    func sendKeyedReply(to target: PendingReply.Target, id: RequestID?, result: RawJSON?, seq: Int64, repeated: Bool) {
        let message = id.map { KeyedCommandReply(id: $0, result: result, seq: seq, repeated: repeated) }
        switch target {
        case .local(let session, let slot):
            session.fill(slot, frame: message.flatMap { try? encoder.frame($0) })
        case .remote(let request):
            let body = message.flatMap { try? encoder.frame($0) }.map { Array($0.body) } ?? []
            answerForwarded(request, seq: seq, body: body)
        }
    }

    /// Restores the keyed commands stored with a channel's kept events
    /// (at start), oldest first, but those past the bounds; returns how
    /// many it restored.
    @discardableResult
    func restoreCommandKeys(_ stored: some Sequence<StoredCommandKey>, into channel: Channel) -> Int {
        let now = clock.now
        var restored = 0
        for record in stored {
            guard let at = try? Date(record.at, strategy: .iso8601) else { continue }
            guard record.seq > channel.seq - Int64(config.historyLimit),
                  now.timeIntervalSince(at) <= idempotencyWindow
            else { continue }
            channel.commandKeys.restore(record.command.key, seq: record.seq, action: record.command.action, at: at,
                                        result: record.command.result.map { RawJSON(validJSON: $0) })
            restored += 1
        }
        return restored
    }

    /// ``ServerConfig/idempotencyWindowS`` as a time interval.
    var idempotencyWindow: TimeInterval { TimeInterval(config.idempotencyWindowS) }
}
