import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// The initial state of every kind, compared key by key with domain.md.
@Suite struct InitialStateTests {
    /// The night Doc Brown first demonstrated the time machine.
    static let demoNight = ISOTime.parse("1985-10-26T01:21:00Z")!

    static let expected: [(ChannelKind, JSONValue)] = [
        (.delorean, .object([
            "present_time": .string("1985-10-26T01:21:00Z"),
            "destination_time": .null,
            "last_departed": .null,
            "speed_mph": .int(0),
            "status": .string("parked"),
        ])),
        (.starport, .object(["dispatches": .array([])])),
        (.timers, .object(["timers": .array([])])),
        (.laps, .object([
            "status": .string("idle"),
            "lap_number": .int(0),
            "lap_elapsed_ms": .int(0),
            "total_elapsed_ms": .int(0),
            "laps": .array([]),
            "average_lap_ms": .null,
            "best_lap_ms": .null,
            "worst_lap_ms": .null,
            "running_since": .null,
        ])),
    ]

    @Test("initial JSON has exactly the domain.md keys and values", arguments: expected)
    func initialJSON(kind: ChannelKind, json: JSONValue) {
        let state = ChannelState.initial(kind: kind, now: Self.demoNight)
        #expect(state.kind == kind)
        // JSONValue.object equality compares the whole key set, so a missing
        // or extra key fails here too.
        #expect(state.json() == json)
    }

    @Test("every kind has an initial state", arguments: ChannelKind.allCases)
    func everyKind(kind: ChannelKind) {
        #expect(ChannelState.initial(kind: kind, now: Self.demoNight).kind == kind)
    }

    @Test("nulls are written out, not omitted", arguments: [
        (ChannelKind.delorean, [#""destination_time":null"#, #""last_departed":null"#]),
        (ChannelKind.laps, [
            #""average_lap_ms":null"#, #""best_lap_ms":null"#,
            #""worst_lap_ms":null"#, #""running_since":null"#,
        ]),
    ])
    func explicitNulls(kind: ChannelKind, fragments: [String]) {
        let text = ChannelState.initial(kind: kind, now: Self.demoNight).jsonText()
        for fragment in fragments {
            #expect(text.contains(fragment), "\(fragment) missing from \(text)")
        }
    }

    @Test func deloreanTextIsCompactInTheStatesKeyOrder() {
        let text = ChannelState.initial(kind: .delorean, now: Self.demoNight).jsonText()
        #expect(text == #"{"present_time":"1985-10-26T01:21:00Z","destination_time":null,"last_departed":null,"speed_mph":0,"status":"parked"}"#)
    }

    @Test func presentTimeUsesTheInjectedClock() {
        let clock = ManualClock(Self.demoNight)
        let before = ChannelState.initial(kind: .delorean, now: clock.now)
        clock.advance(by: 10_952 * 86_400)  // to 21 October 2015, Marty's arrival
        let after = ChannelState.initial(kind: .delorean, now: clock.now)
        guard case .delorean(let first) = before, case .delorean(let second) = after else {
            Issue.record("not a DeLorean state")
            return
        }
        #expect(first.presentTime == "1985-10-26T01:21:00Z")
        #expect(second.presentTime == "2015-10-21T01:21:00Z")
    }

    @Test func presentTimeDropsFractionalSeconds() {
        let state = DeLoreanState.initial(now: Self.demoNight.addingTimeInterval(0.75))
        #expect(state.presentTime == "1985-10-26T01:21:00Z")
    }
}
