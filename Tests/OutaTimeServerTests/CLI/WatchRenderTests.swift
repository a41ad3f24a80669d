import Foundation
import OutaTimeClient
import OutaTimeDomain
import OutaTimeProtocol
import Testing
@testable import outatime

/// `outatime watch`'s board drawn from mirrors and verdicts, without a
/// terminal or a server (issue 27: a stale panel is marked with its age and
/// dimmed; a new trip never shows the last trip's speed).
@Suite("watch rendering")
struct WatchRenderTests {
    static let car = "delorean/main"
    static let created = ISOTime.parse("2026-11-22T07:53:25Z")!

    static func push(_ seq: Int64, _ name: String, _ data: JSONValue = .object([:])) -> ChannelEvent {
        ChannelEvent(EventPush(channel: car, seq: seq, event: name, data: data, at: "2026-11-22T08:00:00Z"))
    }

    /// A car that made one trip (ticks 1…88, `time_travel`) and just started the next.
    static func secondTripStarted() throws -> ChannelMirror {
        var mirror = ChannelMirror(channel: car)
        let outcome = mirror.sync(with: SubscribeResult(channel: car, kind: .delorean, seq: 0, watchers: [],
                                                        state: ChannelState.initial(kind: .delorean, now: created).json()))
        _ = try #require(outcome)
        #expect(mirror.apply(push(1, "destination_set", .object(["destination_time": .string("1985-10-26T01:21:00Z")]))) == .applied)
        #expect(mirror.apply(push(2, "acceleration_started")) == .applied)
        for mph in 1...88 { mirror.record(TickPush(channel: car, data: .object(["speed_mph": .int(Int64(mph))]))) }
        #expect(mirror.apply(push(3, "time_travel", .object([
            "last_departed": .string("2026-11-22T07:53:25Z"), "present_time": .string("1985-10-26T01:21:00Z"),
            "speed_mph": .int(0)]))) == .applied)
        #expect(mirror.apply(push(4, "acceleration_started")) == .applied)
        return mirror
    }

    /// The screen as text, without colours and styles.
    static func screen(_ board: WatchBoard, _ mirrors: [String: ChannelMirror]) -> [String] {
        raw(board, mirrors).map(ANSI.unstyled)
    }

    static func raw(_ board: WatchBoard, _ mirrors: [String: ChannelMirror]) -> [String] {
        WatchRender.lines(board: board, mirrors: mirrors, width: 120, height: 30, now: created)
    }

    @Test("a trip start shows 0 MPH accelerating, never the last trip's 88 MPH")
    func tripStartShowsNoOldSpeed() throws {
        let mirror = try Self.secondTripStarted()
        let board = WatchBoard(server: "127.0.0.1:1985", channels: [Self.car])
        let lines = Self.screen(board, [Self.car: mirror])
        let speed = try #require(lines.first { $0.contains("SPEED") }, "\(lines.joined(separator: "\n"))")
        #expect(speed.contains("0 MPH") && speed.contains("accelerating"), "\(speed)")
        #expect(!lines.contains { $0.contains("88 MPH") }, "\(lines.joined(separator: "\n"))")
        #expect(WatchJSONL.shown(mirror, at: Self.created) == .object([
            "speed_mph": .int(0), "status": .string("accelerating"), "present_time": .string("1985-10-26T01:21:00Z"),
            "destination_time": .string("1985-10-26T01:21:00Z")]))
    }

    @Test("a stale panel is marked STALE with its age and why, its values dimmed; a live one is not")
    func staleMarker() throws {
        let mirror = try Self.secondTripStarted()
        var board = WatchBoard(server: "127.0.0.1:1985", channels: [Self.car])
        board.freshness[Self.car] = .live
        #expect(!Self.screen(board, [Self.car: mirror]).contains { $0.contains("STALE") })

        board.freshness[Self.car] = .stale(ageMs: 3_240, why: .ticksLate)
        let lines = Self.screen(board, [Self.car: mirror])
        let title = try #require(lines.first { $0.contains(Self.car) && $0.contains("seq") })
        #expect(title.contains("STALE 3.2 s") && title.contains("updates stopped"), "\(title)")
        let raw = Self.raw(board, [Self.car: mirror])
        let speed = try #require(raw.first { $0.contains("SPEED") })
        #expect(speed.hasPrefix(ANSI.dim), "dimmed: \(speed.debugDescription)")
        #expect(!speed.contains(ANSI.red), "without the live colours: \(speed.debugDescription)")

        board.freshness[Self.car] = .stale(ageMs: 12_000, why: .disconnected)
        board.link = .stale(ageMs: 12_000, why: .disconnected)
        board.connection = "reconnecting, attempt 2 in 0.8 s: link lost: nothing for 3.1 s"
        let down = Self.screen(board, [Self.car: mirror])
        #expect(down[1].contains("reconnecting, attempt 2 in 0.8 s: link lost: nothing for 3.1 s"), "\(down[1])")
        #expect(down.contains { $0.contains("STALE 12.0 s") && $0.contains("not connected") })

        board.link = .stale(ageMs: 1_600, why: .silentLink)
        board.connection = "connected"
        #expect(Self.screen(board, [Self.car: mirror])[1].contains("link silent 1.6 s"))
    }

    @Test("a subscribe result that took 2.4 s to arrive (a 300 KB snapshot on 1 Mbit) is already that old: a running car's panel is stale at once")
    func slowSnapshotIsOld() throws {
        var liveness = WatchLiveness()
        let mirror = try Self.secondTripStarted()
        let link = LinkLiveness(isReady: true, lastFrameAtMs: 20_000)
        liveness.stateChanged(Self.car, mirror: mirror, nowMs: 20_000, ageOnArrivalMs: 2_400)
        #expect(liveness.freshness(Self.car, link: link, nowMs: 20_000) == .stale(ageMs: 2_400, why: .ticksLate))
        var quick = WatchLiveness()
        quick.stateChanged(Self.car, mirror: mirror, nowMs: 20_000, ageOnArrivalMs: 40)
        #expect(quick.freshness(Self.car, link: link, nowMs: 20_000) == .live, "a snapshot that came at once is live")
    }

    @Test("a panel's promise: stale when a running car's ticks stop, live again with the next; idle needs only the link")
    func livenessFollowsTicks() throws {
        var liveness = WatchLiveness()
        var mirror = try Self.secondTripStarted()
        let link = LinkLiveness(isReady: true, lastFrameAtMs: 5_000)
        liveness.stateChanged(Self.car, mirror: mirror, nowMs: 5_000)  // acceleration_started at 5.0 s
        #expect(liveness.freshness(Self.car, link: link, nowMs: 5_900) == .live)
        #expect(liveness.freshness(Self.car, link: link, nowMs: 6_100) == .stale(ageMs: 1_100, why: .ticksLate),
                "no first tick within a second of the start")
        mirror.record(TickPush(channel: Self.car, data: .object(["speed_mph": .int(1)])))
        liveness.ticked(Self.car, nowMs: 6_150)
        #expect(liveness.freshness(Self.car, link: link, nowMs: 6_200) == .live)
        #expect(liveness.freshness(Self.car, link: link, nowMs: 7_300) == .stale(ageMs: 1_150, why: .ticksLate))
        // A recovery that kept the tick (nothing happened meanwhile) does not make it new.
        liveness.stateChanged(Self.car, mirror: mirror, nowMs: 9_000)
        #expect(liveness.freshness(Self.car, link: LinkLiveness(isReady: true, lastFrameAtMs: 9_000), nowMs: 9_000)
                == .stale(ageMs: 2_850, why: .ticksLate))
        // Parked: only the link counts.
        #expect(mirror.apply(Self.push(5, "time_travel", .object([
            "last_departed": .string("1985-10-26T01:21:00Z"), "present_time": .string("1985-10-26T01:21:00Z"),
            "speed_mph": .int(0)]))) == .applied)
        liveness.stateChanged(Self.car, mirror: mirror, nowMs: 9_100)
        #expect(liveness.freshness(Self.car, link: LinkLiveness(isReady: true, lastFrameAtMs: 9_100), nowMs: 60_000) == .live)
    }

    @Test("the reasons in words: bye reasons explained, a lost link with its silence")
    func reasons() {
        #expect(DisconnectReason.unresponsive.explanation(silenceMs: 3_140) == "link lost: nothing for 3.1 s")
        #expect(DisconnectReason.bye(.slowConsumer).explanation() == "the server closed it: we read too slowly (bye slow_consumer)")
        #expect(DisconnectReason.endOfStream.explanation() == "server closed the connection")
        #expect(DisconnectReason.bye(.serverShutdown).code == "bye:server_shutdown")
        #expect(WatchLines.connection(.reconnecting(attempt: 1, delayMs: 200), host: "h", port: 1,
                                      drop: (.unresponsive, 3_140))
                == "connection reconnecting attempt 1 in 200 ms (link lost: nothing for 3.1 s)")
    }

    @Test("the title line says why it reconnects and when it recovered, with what the recovery brought")
    func connectionLine() {
        let lost: (reason: DisconnectReason, silenceMs: UInt64?) = (.unresponsive, 3_140)
        #expect(WatchBoard.connectionLine(.reconnecting(attempt: 1, delayMs: 800), everConnected: true, lastDrop: lost,
                                          recovery: nil, lastDisconnect: .unresponsive)
                == "reconnecting, attempt 1 in 0.8 s: link lost: nothing for 3.1 s")
        #expect(WatchBoard.connectionLine(.reconnecting(attempt: 3, delayMs: 1_600), everConnected: true, lastDrop: lost,
                                          recovery: nil, lastDisconnect: .connectTimeout)
                == "reconnecting, attempt 3 in 1.6 s: link lost: nothing for 3.1 s; last try: connect timed out")
        #expect(WatchBoard.connectionLine(.ready, everConnected: true, lastDrop: (.bye(.slowConsumer), nil),
                                          recovery: ("12:03:04", 14, 0), lastDisconnect: nil)
                == "recovered 12:03:04 after the server closed it: we read too slowly (bye slow_consumer); 14 events replayed")
        #expect(WatchBoard.connectionLine(.ready, everConnected: true, lastDrop: (.endOfStream, nil),
                                          recovery: ("12:03:04", 0, 1), lastDisconnect: nil)
                == "recovered 12:03:04 after server closed the connection; state reloaded")
        #expect(WatchBoard.connectionLine(.ready, everConnected: false, lastDrop: nil, recovery: nil, lastDisconnect: nil)
                == "connected")
    }

    @Test("lines and --json: the latest attempt's reason from the second attempt on, when it is news")
    func lastTryLines() {
        let drop = (reason: DisconnectReason.bye(.serverShutdown), silenceMs: UInt64?.none)
        let busy = DisconnectReason.bye(.serverBusy)
        let second = ConnectionState.reconnecting(attempt: 2, delayMs: 200)
        #expect(WatchBoard.lastTry(second, drop: drop.reason, latest: busy) == busy)
        #expect(WatchBoard.lastTry(.reconnecting(attempt: 1, delayMs: 100), drop: drop.reason, latest: busy) == nil)
        #expect(WatchBoard.lastTry(second, drop: drop.reason, latest: drop.reason) == nil, "not said twice")
        #expect(WatchLines.connection(second, host: "h", port: 1, drop: drop, lastTry: busy)
            == "connection reconnecting attempt 2 in 200 ms (the server is shutting down (bye server_shutdown)); "
            + "last try: the server is full (bye server_busy)")
        let line = WatchJSON.connection(second, host: "h", port: 1, drop: drop, lastTry: busy)
        let json = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
        #expect(json["reason_code"] as? String == "bye:server_shutdown" && json["last_try_code"] as? String == "bye:server_busy",
                "\(line)")
        #expect(WatchBoard.connectionLine(second, everConnected: true, lastDrop: drop, recovery: nil, lastDisconnect: busy)
            == "reconnecting, attempt 2 in 0.2 s: the server is shutting down (bye server_shutdown); "
            + "last try: the server is full (bye server_busy)")
    }

    @Test("on 80 columns a long reconnect line is continued on the next line, its bye codes whole")
    func longConnectionLineWraps() throws {
        var board = WatchBoard(server: "127.0.0.1:1985", channels: [Self.car])
        board.connection = WatchBoard.connectionLine(
            .reconnecting(attempt: 3, delayMs: 2_000), everConnected: true,
            lastDrop: (reason: .bye(.serverShutdown), silenceMs: nil), recovery: nil,
            lastDisconnect: .bye(.serverBusy))
        #expect(board.connection.count > 80, "\(board.connection)")
        let lines = WatchRender.lines(board: board, mirrors: [:], width: 80, height: 30, now: Self.created).map(ANSI.unstyled)
        #expect(lines.allSatisfy { ANSI.width($0) <= 80 }, "\(lines.joined(separator: "\n"))")
        let text = lines.joined(separator: "\n")
        #expect(text.contains("(bye server_shutdown)") && text.contains("(bye server_busy)"), "\(text)")
        // Wide enough: one line, as before.
        let wide = WatchRender.lines(board: board, mirrors: [:], width: 200, height: 30, now: Self.created).map(ANSI.unstyled)
        #expect(wide[1].contains("(bye server_busy)") && !wide[2].hasPrefix("   "), "\(wide.prefix(3))")
    }
}
