import Foundation
import OutaTimeClient
import OutaTimeProtocol

/// Issue 27: never live-looking when stale. The session judges every panel
/// (``Staleness``) on each push and every ``pulseMs`` — an idle link is
/// probed by the connection's own liveness pings — says why it reconnects and when it recovered, and writes the
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
    /// A channel's mirror took an event or a subscribe result (`synced`:
    /// then the time its frame took to arrive counts in the state's age).
    func stateChanged(_ channel: String, synced: Bool = false) {
        loop.updateTime()
        liveness.stateChanged(channel, mirror: connection.mirror(channel), nowMs: loop.now,
                              ageOnArrivalMs: synced ? connection.lastFrameTransferMs : 0)
        evaluate()
        emitShown(channel)
        changed()
    }

    /// Judges the link and every panel now; reports what turned stale or
    /// live, and redraws while anything is stale (its age moves on).
    func evaluate() {
        let now = loop.now
        let link = LinkLiveness(isReady: connection.isReady && connection.state == .ready,
                                lastFrameAtMs: connection.lastFrameAtMs, pingSentAtMs: connection.probeSentAtMs,
                                rttMs: connection.stats.smoothedRTTMs.map { UInt64($0.rounded()) })
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
