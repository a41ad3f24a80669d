import Foundation
@testable import OutaTimeClient
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// A tick describes the state it arrived after (PROTOCOL §7): the mirror
/// drops it when an event or a `subscribe` result moves the state past it,
/// so no value of a previous trip, run or state shows as current (issue 27:
/// `watch` flashed the last trip's "88 MPH accelerating" at a trip start).
@Suite("Channel mirror ticks")
struct ChannelMirrorTickTests {
    static let car = "delorean/main"
    static let created = ISOTime.parse("2026-11-22T07:53:25Z")!

    static func push(_ seq: Int64, _ name: String, _ data: JSONValue = .object([:]), on channel: String = car) -> ChannelEvent {
        ChannelEvent(EventPush(channel: channel, seq: seq, event: name, data: data, at: "2026-11-22T08:00:00Z"))
    }

    static func history(_ event: ChannelEvent) -> HistoryEvent {
        HistoryEvent(seq: event.seq, event: event.event, data: event.data, at: event.at)
    }

    static func tick(_ data: JSONValue, on channel: String = car) -> TickPush<JSONValue> {
        TickPush(channel: channel, data: data)
    }

    /// Syncs `mirror` with `result`, requiring that it took it.
    static func sync(_ mirror: inout ChannelMirror, _ result: SubscribeResult) throws {
        let outcome = mirror.sync(with: result)
        _ = try #require(outcome)
    }

    /// `value[key]` of a JSON object.
    static func field(_ value: JSONValue?, _ key: String) -> JSONValue? {
        guard case .object(let fields)? = value else { return nil }
        return fields[key]
    }

    static func speed(_ mph: Int64) -> TickPush<JSONValue> { tick(.object(["speed_mph": .int(mph)])) }

    /// seq 1 destination set, seq 2 a trip started.
    static let destination = push(1, "destination_set", .object(["destination_time": .string("1985-10-26T01:21:00Z")]))
    static let started = push(2, "acceleration_started")
    static let travelled = push(3, "time_travel", .object([
        "last_departed": .string("2026-11-22T07:53:25Z"), "present_time": .string("1985-10-26T01:21:00Z"),
        "speed_mph": .int(0)]))
    static let startedAgain = push(4, "acceleration_started")

    /// A car synced at seq 0, parked.
    static func parkedCar() throws -> ChannelMirror {
        var mirror = ChannelMirror(channel: car)
        let state = ChannelState.initial(kind: .delorean, now: created)
        try Self.sync(&mirror, SubscribeResult(channel: car, kind: .delorean, seq: 0, watchers: [],
                                                          state: state.json()))
        return mirror
    }

    /// A car at the end of its first trip: 88 mph ticked, then `time_travel` (seq 3).
    static func afterFirstTrip() throws -> ChannelMirror {
        var mirror = try parkedCar()
        #expect(mirror.apply(destination) == .applied)
        #expect(mirror.apply(started) == .applied)
        for mph in 1...88 { mirror.record(speed(Int64(mph))) }
        #expect(Self.field(mirror.lastTick, "speed_mph") == .int(88))
        #expect(mirror.apply(travelled) == .applied)
        return mirror
    }

    @Test("acceleration_started drops the last trip's 88 mph: the new trip shows speed 0 until its first tick")
    func tripStartDropsOldSpeed() throws {
        var mirror = try Self.afterFirstTrip()
        #expect(mirror.lastTick == nil, "time_travel parks the car: the 88 mph tick is over")
        #expect(mirror.apply(Self.startedAgain) == .applied)
        #expect(mirror.lastTick == nil)
        #expect(Self.field(mirror.snapshot(at: Self.created), "status") == .string("accelerating"))
        #expect(Self.field(mirror.snapshot(at: Self.created), "speed_mph") == .int(0))
        mirror.record(Self.speed(1))
        #expect(Self.field(mirror.lastTick, "speed_mph") == .int(1), "the new trip's first tick is kept")
    }

    @Test("an 88 mph tick that came after time_travel's seq only in arrival order is still dropped by the next start")
    func tickThenStartWithoutTravel() throws {
        // A tick recorded at seq 3, then the next event: it describes seq 3, not 4.
        var mirror = try Self.afterFirstTrip()
        mirror.record(Self.speed(88))  // a late duplicate of the last trip's tick
        #expect(mirror.apply(Self.startedAgain) == .applied)
        #expect(mirror.lastTick == nil)
    }

    @Test("a tick that arrived after a held event survives that event's application (the run's first tick)")
    func tickAfterHeldEventKept() throws {
        var mirror = try Self.parkedCar()
        #expect(mirror.apply(Self.destination) == .applied)
        mirror.beginSync()  // a resubscribe in flight: events are held
        #expect(mirror.apply(Self.started) == .held)
        mirror.record(Self.speed(1))  // follows acceleration_started on the wire (§7)
        let recovery = SubscribeResult(channel: Self.car, kind: .delorean, seq: 1, watchers: [], recovered: true, events: [])
        try Self.sync(&mirror, recovery)
        for event in mirror.endSync() { _ = mirror.apply(event) }
        #expect(mirror.seq == 2)
        #expect(Self.field(mirror.lastTick, "speed_mph") == .int(1), "the tick describes seq 2: kept")
    }

    @Test("a recovery with events drops a tick from before the outage; one with none keeps it")
    func recoveryDropsOlderTick() throws {
        var mirror = try Self.parkedCar()
        #expect(mirror.apply(Self.destination) == .applied)
        #expect(mirror.apply(Self.started) == .applied)
        mirror.record(Self.speed(42))
        // Reconnected: nothing happened meanwhile.
        let nothing = SubscribeResult(channel: Self.car, kind: .delorean, seq: 2, watchers: [], recovered: true, events: [])
        try Self.sync(&mirror, nothing)
        #expect(Self.field(mirror.lastTick, "speed_mph") == .int(42), "still the same run: the tick stays (marked stale by its age)")
        // Reconnected after the trip ended and another began.
        let missed = SubscribeResult(channel: Self.car, kind: .delorean, seq: 4, watchers: [], recovered: true,
                                     events: [Self.history(Self.travelled), Self.history(Self.startedAgain)])
        try Self.sync(&mirror, missed)
        #expect(mirror.lastTick == nil, "42 mph was the previous trip")
        #expect(Self.field(mirror.snapshot(at: Self.created), "speed_mph") == .int(0))
    }

    @Test("a full state at another seq drops the tick; at the tick's seq keeps it")
    func reloadDropsTickOfAnotherSeq() throws {
        var mirror = try Self.parkedCar()
        #expect(mirror.apply(Self.destination) == .applied)
        #expect(mirror.apply(Self.started) == .applied)
        mirror.record(Self.speed(42))
        var state = ChannelState.initial(kind: .delorean, now: Self.created)
        state.apply(Self.destination.domainEvent, at: Self.created)
        state.apply(Self.started.domainEvent, at: Self.created)
        try Self.sync(&mirror, SubscribeResult(channel: Self.car, kind: .delorean, seq: 2, watchers: [],
                                                          state: state.json()))
        #expect(mirror.lastTick != nil, "the same seq: the tick still describes it")
        state.apply(Self.travelled.domainEvent, at: Self.created)
        state.apply(Self.startedAgain.domainEvent, at: Self.created)
        try Self.sync(&mirror, SubscribeResult(channel: Self.car, kind: .delorean, seq: 4, watchers: [],
                                                          state: state.json()))
        #expect(mirror.lastTick == nil, "a reload past the tick")
    }

    @Test("a stopwatch reset drops the running stopwatch's last tick")
    func lapsResetDropsTick() throws {
        let session = "laps/run"
        var mirror = ChannelMirror(channel: session)
        try Self.sync(&mirror, SubscribeResult(channel: session, kind: .laps, seq: 0, watchers: [],
                                                          state: ChannelState.initial(kind: .laps, now: Self.created).json()))
        let started = Self.push(1, "started", .object([
            "running_since": .string("2026-11-22T08:00:00.000Z"), "lap_number": .int(1),
            "lap_elapsed_ms": .int(0), "total_elapsed_ms": .int(0)]), on: session)
        #expect(mirror.apply(started) == .applied)
        #expect(mirror.tickCadenceMs() == 100)
        mirror.record(Self.tick(.object(["lap_number": .int(1), "lap_elapsed_ms": .int(5_300),
                                          "total_elapsed_ms": .int(5_300)]), on: session))
        #expect(mirror.apply(Self.push(2, "reset", on: session)) == .applied)
        #expect(mirror.lastTick == nil)
        #expect(mirror.tickCadenceMs() == nil, "an idle stopwatch promises no ticks")
    }

    @Test("a timer list synced from a snapshot with a running timer promises a tick a second (no countdown bases on the wire)")
    func snapshotListPromisesTicks() throws {
        let list = "timers/big"
        var mirror = ChannelMirror(channel: list)
        let timer: JSONValue = .object(["id": .int(1), "event": .string("Clock tower"), "location": .string(""),
                                        "remaining_s": .int(86_399), "status": .string("running"), "viewers": .int(1)])
        try Self.sync(&mirror, SubscribeResult(channel: list, kind: .timers, seq: 2, watchers: [],
                                               state: .object(["timers": .array([timer]), "next_id": .int(2)])))
        #expect(mirror.tickCadenceMs() == 1_000)
    }

    @Test("the tick cadence follows the state: a car only while accelerating")
    func cadence() throws {
        var mirror = try Self.parkedCar()
        #expect(mirror.tickCadenceMs() == nil)
        #expect(mirror.apply(Self.destination) == .applied)
        #expect(mirror.apply(Self.started) == .applied)
        #expect(mirror.tickCadenceMs(deloreanTickMs: 250) == 250)
        #expect(mirror.apply(Self.travelled) == .applied)
        #expect(mirror.tickCadenceMs() == nil)
    }

    @Test("a timer restarted, stopped or removed drops the list's last tick: no old remaining seconds shown")
    func timersDropTick() throws {
        let list = "timers/1985.10.26"
        var mirror = ChannelMirror(channel: list)
        try Self.sync(&mirror, SubscribeResult(channel: list, kind: .timers, seq: 0, watchers: [],
                                               state: ChannelState.initial(kind: .timers, now: Self.created).json()))
        let timer: JSONValue = .object(["id": .int(1), "event": .string("Clock tower"), "location": .string("Hill Valley"),
                                        "remaining_s": .int(600), "status": .string("stopped"), "viewers": .int(0)])
        #expect(mirror.apply(Self.push(1, "timer_added", .object(["timer": timer]), on: list)) == .applied)
        #expect(mirror.apply(Self.push(2, "timer_started", .object(["id": .int(1), "remaining_s": .int(600)]), on: list)) == .applied)
        #expect(mirror.tickCadenceMs() == 1_000)
        let tick = Self.tick(.object(["timers": .array([.object(["id": .int(1), "remaining_s": .int(590)])])]), on: list)
        mirror.record(tick)
        #expect(mirror.apply(Self.push(3, "timer_stopped", .object(["id": .int(1), "remaining_s": .int(589)]), on: list)) == .applied)
        #expect(mirror.lastTick == nil, "stopped at 589: the 590 tick is over")
        #expect(mirror.tickCadenceMs() == nil, "nothing runs")
        #expect(mirror.apply(Self.push(4, "timer_started", .object(["id": .int(1), "remaining_s": .int(589)]), on: list)) == .applied)
        mirror.record(tick)  // a tick of the restarted countdown: it describes seq 4…
        #expect(mirror.apply(Self.push(5, "timer_removed", .object(["id": .int(1)]), on: list)) == .applied)
        #expect(mirror.lastTick == nil, "…but a removal past it drops it")
    }
}
