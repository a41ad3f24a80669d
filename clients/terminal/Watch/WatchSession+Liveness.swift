import Foundation
import OutaTimeClient
import OutaTimeProtocol

/// Issue 27: never live-looking when stale. The session judges every panel
/// (``Staleness``) on each push and every ``pulseMs``, pings an idle server
/// itself, says why it reconnects and when it recovered, and writes the
/// `--jsonl` objects (WatchJSONL.swift).
extension WatchSession {
    /// The connection part of the title line (``WatchBoard/connectionLine``).
    func connectionLine(_ state: ConnectionState) -> String {
        WatchBoard.connectionLine(state, everConnected: everConnected, lastDrop: lastDrop,
                                  recovery: recovery.map { (Self.clock.string(from: $0.at), $0.replayed, $0.reloaded) },
                                  lastDisconnect: connection.lastDisconnect)
    }

    /// `12:03:04`, local time.
    static let clock: DateFormatter = {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        return formatter
    }()

    /// How often staleness is judged again (and the ages on screen move on).
    static let pulseMs: UInt64 = 200
    /// Silence after which the watcher pings the server itself: an idle
    /// board gets no pushes, and only a ping tells a quiet server from a
    /// dead link (issue 27). Pushes make pings needless: a busy board sends none.
    static let probeAfterMs: UInt64 = 1_000

    /// Sends a liveness `ping` when nothing arrived for ``probeAfterMs`` and
    /// none is out. It has no deadline of its own: while it is out, the
    /// link counts as silent (``Staleness/link(_:nowMs:)``); a dropped
    /// connection fails it.
    func probe() {
        guard connection.isReady, case .ready = connection.state, probeSentAt == nil else { return }
        let silence = loop.now &- min(connection.lastFrameAtMs ?? loop.now, loop.now)
        guard silence >= Self.probeAfterMs else { return }
        probeSerial += 1
        let serial = probeSerial
        let sentAt = loop.now
        probeSentAt = sentAt
        connection.request("ping", timeoutMs: 3_600_000) { [unowned self] result in
            guard serial == probeSerial else { return }
            probeSentAt = nil
            if case .success = result, board.link.isLive {
                // A reply that waited out a silence measures the outage, not
                // the path; one slow reply moves the estimate only so far.
                loop.updateTime()
                let sample = loop.now &- sentAt
                rttMs = rttMs.map { ($0 * 7 + min(sample, 2 * $0 + 100)) / 8 } ?? sample
            }
            evaluate()
        }
    }

    /// A channel's mirror took an event or a subscribe result.
    func stateChanged(_ channel: String) {
        loop.updateTime()
        liveness.stateChanged(channel, mirror: connection.mirror(channel), nowMs: loop.now)
        evaluate()
        emitShown(channel)
        changed()
    }

    /// Judges the link and every panel now; reports what turned stale or
    /// live, and redraws while anything is stale (its age moves on).
    func evaluate() {
        let now = loop.now
        let link = LinkLiveness(isReady: connection.isReady && connection.state == .ready,
                                lastFrameAtMs: connection.lastFrameAtMs, pingSentAtMs: probeSentAt, rttMs: rttMs)
        let linkVerdict = Staleness.link(link, nowMs: now)
        // Piped text says stale/live too, once connected (`--json` stays the
        // server's pushes and the watcher's news, as documented).
        let textLines = !interactive && !jsonl && !json && everConnected
        var moved = false
        if linkVerdict.isLive != board.link.isLive || Self.cause(linkVerdict) != Self.cause(board.link) {
            moved = true
            if jsonl { emit("link", WatchJSONL.verdict(linkVerdict)) }
            if textLines { line(WatchLines.link(linkVerdict)) }
        }
        board.link = linkVerdict
        var anyStale = !linkVerdict.isLive
        for channel in board.channels {
            let verdict = liveness.freshness(channel, link: link, nowMs: now)
            let before = board.freshness[channel]
            if before == nil || before?.isLive != verdict.isLive || Self.cause(before!) != Self.cause(verdict) {
                if before != nil || !verdict.isLive {
                    moved = true
                    if jsonl {
                        var fields = WatchJSONL.verdict(verdict)
                        fields["channel"] = .string(channel)
                        emit("freshness", fields)
                    }
                    if textLines { line(WatchLines.freshness(channel, verdict)) }
                }
            }
            board.freshness[channel] = verdict
            anyStale = anyStale || !verdict.isLive
        }
        if moved || anyStale { changed() }
    }

    static func cause(_ freshness: Freshness) -> StaleCause? {
        if case .stale(_, let why) = freshness { return why }
        return nil
    }

    /// `--jsonl`: what `channel`'s panel shows now.
    func emitShown(_ channel: String) {
        guard jsonl, let mirror = connection.mirror(channel), mirror.state != nil else { return }
        var fields: [String: JSONValue] = ["channel": .string(channel), "seq": .int(mirror.seq),
                                           "values": WatchJSONL.shown(mirror, at: Date())]
        fields["live"] = .bool(board.freshness[channel]?.isLive ?? true)
        emit("shown", fields)
    }

    /// `--jsonl`: one object, stamped.
    func emit(_ type: String, _ fields: [String: JSONValue]) {
        guard jsonl, !finished || type == "connection" else { return }
        loop.updateTime()
        writeAll(WatchJSONL.line(type, monoMs: loop.now, wall: Date(), fields) + "\n")
    }
}
