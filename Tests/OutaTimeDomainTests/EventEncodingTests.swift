import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Every kind's events are typed and encoded once, when made: the text is
/// what the store keeps and every `event` push carries. These tests pin the
/// text (keys and their order do not vary from run to run) and check that
/// reading it back gives the same typed event, so a replay applies exactly
/// what the server applied.
@Suite("typed events encoded once")
struct EventEncodingTests {
    static let timer = CountdownTimer(id: 3, event: "Enchantment", location: "Hill Valley", remainingS: 90,
                                      status: .stopped, viewers: 0)

    static let timerEvents: [TimerEvent] = [
        .added(timer), .updated(timer, fields: ["event", "remaining_s"]), .updated(timer, fields: nil),
        .removed(id: 3), .started(id: 3, remainingS: 42), .stopped(id: 3, remainingS: 41), .finished(id: 3),
    ]

    static let dispatch = Dispatch(id: 7, model: "falcon", path: "AB", distanceKM: 12_000, durationS: 600,
                                   departsAt: "1985-10-26T01:21:00Z", arrivesAt: "1985-10-26T01:31:00Z",
                                   status: .scheduled, createdBy: nil, note: "via the clock tower")

    static let starportEvents: [StarportEvent] = [
        .dispatched(dispatch), .cancelled(id: 7),
        .statusChanged(Dispatch.StatusChange(id: 7, status: .inFlight, at: ISOTime.parse("1985-10-26T01:21:00Z")!)),
    ]

    static let deloreanEvents: [DeLoreanEvent] = [
        .destinationSet(destinationTime: "1955-11-12T22:04:00Z"), .accelerationStarted,
        .timeTravel(lastDeparted: "1985-10-26T01:21:00Z", presentTime: "1955-11-12T22:04:00Z"),
        .accelerationAborted(reason: "server_restart"),
    ]

    static let lapEvents: [LapEvent] = [
        .started(runningSince: "2026-11-25T10:00:00.000Z", lapNumber: 1, lapElapsedMS: 0, totalElapsedMS: 0),
        .stopped(lapElapsedMS: 1_500, totalElapsedMS: 9_500),
        .lapCompleted(Lap(lap: 2, timeMS: 4_000), statistics: LapStatistics(averageMS: 4_500, bestMS: 4_000, worstMS: 5_000),
                      lapNumber: 3, totalElapsedMS: 9_000, completedAt: "2026-11-25T10:00:09.000Z"),
        .reset,
    ]

    @Test("the text of each event is fixed: keys in one order")
    func fixedText() {
        #expect(Self.timerEvents[0].domainEvent.json.text
            == #"{"timer":{"id":3,"event":"Enchantment","location":"Hill Valley","remaining_s":90,"status":"stopped","viewers":0}}"#)
        #expect(Self.timerEvents[1].domainEvent.json.text.hasSuffix(#","fields":["event","remaining_s"]}"#))
        #expect(Self.timerEvents[4].domainEvent.json.text == #"{"id":3,"remaining_s":42}"#)
        #expect(Self.starportEvents[0].domainEvent.json.text == #"{"dispatch":{"id":7,"model":"falcon","path":"AB","distance_km":12000,"duration_s":600,"departs_at":"1985-10-26T01:21:00Z","arrives_at":"1985-10-26T01:31:00Z","status":"scheduled","created_by":null,"note":"via the clock tower"}}"#)
        #expect(Self.starportEvents[2].domainEvent.json.text == #"{"id":7,"status":"in_flight","at":"1985-10-26T01:21:00Z"}"#)
        #expect(Self.deloreanEvents[2].domainEvent.json.text
            == #"{"last_departed":"1985-10-26T01:21:00Z","present_time":"1955-11-12T22:04:00Z","speed_mph":0}"#)
        #expect(Self.deloreanEvents[1].domainEvent.json.text == "{}")
        #expect(Self.lapEvents[2].domainEvent.json.text
            == #"{"lap":2,"time_ms":4000,"average_lap_ms":4500,"best_lap_ms":4000,"worst_lap_ms":5000,"lap_number":3,"total_elapsed_ms":9000,"completed_at":"2026-11-25T10:00:09.000Z"}"#)
    }

    @Test("read back from their text, events are the typed events that were made")
    func roundTrip() throws {
        func readBack(_ event: DomainEvent) throws -> DomainEvent {
            DomainEvent(event.name, try JSONValue.parse(Data(event.json.text.utf8)))
        }
        for event in Self.timerEvents { #expect(TimerEvent(try readBack(event.domainEvent)) == event) }
        for event in Self.starportEvents { #expect(StarportEvent(try readBack(event.domainEvent)) == event) }
        for event in Self.deloreanEvents { #expect(DeLoreanEvent(try readBack(event.domainEvent)) == event) }
        for event in Self.lapEvents { #expect(LapEvent(try readBack(event.domainEvent)) == event) }
    }

    @Test("an event's Codable form (Foundation) is the JSON it writes")
    func foundationAgrees() throws {
        let encoder = JSONEncoder()
        for event in Self.timerEvents.map(\.domainEvent) + Self.starportEvents.map(\.domainEvent) {
            let foundation = try JSONValue.parse(try encoder.encode(event.json))
            #expect(foundation == event.data)
        }
    }

    @Test("a typed snapshot is the state's value: the wire state of a timer list at a moment")
    func typedSnapshot() throws {
        var list = TimerListState.initialState(now: Date(timeIntervalSince1970: 0))
        let outcome = try list.perform("add", ActionArgs(["event": .string("Enchantment"), "remaining_s": .int(90)]),
                                       ActionContext(now: Date(timeIntervalSince1970: 0)))
        #expect(outcome.events.count == 1)
        let text = try RawJSON(encoding: list.wireState(at: Date(timeIntervalSince1970: 5))).text
        #expect(text == #"{"timers":[{"id":1,"event":"Enchantment","location":"","remaining_s":90,"status":"stopped","viewers":0}]}"#)
        #expect(list.snapshot(at: Date(timeIntervalSince1970: 5)) == (try JSONValue.parse(Data(text.utf8))))
    }
}
