import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// json -> state -> json must be lossless: the store keeps states as JSON text
/// and the server reloads them after a restart.
@Suite struct StateRoundTripTests {
    static let now = ISOTime.parse("1985-10-26T01:21:00Z")!

    /// Initial states plus states with every optional field both set and unset.
    static let samples: [ChannelState] = ChannelKind.allCases.map {
        ChannelState.initial(kind: $0, now: now)
    } + [
        .delorean(DeLoreanState(
            presentTime: "1955-11-12T22:04:00Z", destinationTime: "1985-10-26T01:24:00Z",
            lastDeparted: "1985-10-26T01:21:00Z", speedMPH: 42, status: .accelerating)),
        .starport(StarportState(dispatches: [
            Dispatch(id: 1, model: "SWingV2", path: "AC", distanceKM: 70_000, durationS: 28_080,
                     departsAt: "2024-01-01T00:00:00Z", arrivesAt: "2024-01-01T07:48:00Z"),
            Dispatch(id: 2, model: "TearDrop", path: "ABAB", distanceKM: 96_000, durationS: 45_818,
                     departsAt: "2024-01-01T00:00:00Z", arrivesAt: "2024-01-01T12:43:38Z",
                     status: .inFlight, createdBy: "Marty", note: "back by dinner"),
        ])),
        .timers(TimerListState(timers: [
            CountdownTimer(id: 1, event: "Lightning strikes the clock tower", location: "Hill Valley",
                           remainingS: 3_600, status: .running, viewers: 2),
            CountdownTimer(id: 2, event: "Enchantment Under the Sea", location: "", remainingS: 0,
                           status: .finished),
        ])),
        .laps(LapSessionState(
            status: .running, lapNumber: 3, lapElapsedMS: 1_250, totalElapsedMS: 181_250,
            laps: [Lap(lap: 1, timeMS: 90_000), Lap(lap: 2, timeMS: 90_000)],
            averageLapMS: 90_000, bestLapMS: 90_000, worstLapMS: 90_000,
            runningSince: "2024-01-01T00:00:00Z")),
    ]

    @Test("json -> state -> json", arguments: samples)
    func jsonValueRoundTrip(state: ChannelState) throws {
        let json = state.json()
        let decoded = try ChannelState(kind: state.kind, json: json)
        #expect(decoded == state)
        #expect(decoded.json() == json)
    }

    @Test("text -> state -> text", arguments: samples)
    func textRoundTrip(state: ChannelState) throws {
        let text = state.jsonText()
        let decoded = try ChannelState(kind: state.kind, jsonText: text)
        #expect(decoded == state)
        #expect(decoded.jsonText() == text)
    }

    @Test func dispatchWritesNullNoteAndCreator() throws {
        let state = Self.samples.first { if case .starport(let s) = $0 { !s.dispatches.isEmpty } else { false } }!
        guard case .object(let top) = state.json(), case .array(let list) = top["dispatches"],
              case .object(let first) = list.first else {
            Issue.record("unexpected shape \(state.json())")
            return
        }
        #expect(Set(first.keys) == [
            "id", "model", "path", "distance_km", "duration_s", "departs_at",
            "arrives_at", "status", "created_by", "note",
        ])
        #expect(first["note"] == .null)
        #expect(first["created_by"] == .null)
        #expect(first["status"] == .string("scheduled"))
    }

    @Test func timerKeys() throws {
        let state = ChannelState.timers(TimerListState(timers: [
            CountdownTimer(id: 7, event: "Launch", location: "Pad 39A", remainingS: 10),
        ]))
        #expect(state.json() == .object(["timers": .array([.object([
            "id": .int(7), "event": .string("Launch"), "location": .string("Pad 39A"),
            "remaining_s": .int(10), "status": .string("stopped"), "viewers": .int(0),
        ])])]))
    }

    /// Optional keys may be missing when reading (lenient with older stored
    /// states); a required one is named in the error.
    @Test func missingKeyIsNamed() {
        let json = JSONValue.object(["present_time": .string("1985-10-26T01:21:00Z"), "status": .string("parked")])
        #expect {
            try ChannelState(kind: .delorean, json: json)
        } throws: { error in
            guard let error = error as? StateDecodingError else { return false }
            return error.kind == .delorean && error.message.contains("speed_mph")
        }
    }

    @Test func wrongKindIsRejected() {
        let starport = ChannelState.initial(kind: .starport, now: Self.now).jsonText()
        #expect(throws: StateDecodingError.self) {
            try ChannelState(kind: .laps, jsonText: starport)
        }
    }

    @Test func unknownStatusIsRejected() {
        var json = ChannelState.initial(kind: .laps, now: Self.now).json()
        if case .object(var fields) = json {
            fields["status"] = .string("sprinting")
            json = .object(fields)
        }
        #expect(throws: StateDecodingError.self) {
            try ChannelState(kind: .laps, json: json)
        }
    }
}
