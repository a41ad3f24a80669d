import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// The per-item and per-event byte bounds each kind declares
/// (``ChannelBehaviour/maxItemBytes``, ``ChannelBehaviour/maxEventDataBytes``)
/// against the encoder: the worst case each kind can hold is built and
/// measured, and must meet the bound exactly (so the bound is neither
/// wrong nor slack). PROTOCOL.md §11, "Frame bounds", rests on them.
@Suite("item and event byte bounds")
struct ItemBoundTests {
    /// The text of `characters` characters and 4 × as many bytes that JSON
    /// escapes the most when control characters are refused: every
    /// character a `"`, the last one carrying combining marks (2 bytes each)
    /// up to the byte limit. It keeps the text rule.
    static func worstText(characters: Int) -> String {
        // 3 × N bytes of marks: two-byte U+0301s, and one three-byte U+20D0 when odd.
        let room = 3 * characters
        var marks = String.UnicodeScalarView(repeatElement(Unicode.Scalar(0x301)!, count: room / 2 - (room % 2)))
        if room % 2 == 1 { marks.append(Unicode.Scalar(0x20D0)!) }
        let text = String(repeating: "\"", count: characters) + String(marks)
        precondition(TextLength(max: characters).allows(text) && TextLength.firstControlCharacter(in: text) == nil)
        return text
    }

    /// 19 digits, like `Int.max`: every count, id and duration is a
    /// non-negative `Int` (this one leaves room for `+ 1`).
    static let big = Int.max / 2
    static let latest = "9999-12-31T23:59:59Z"

    static let worstTimer = CountdownTimer(
        id: big, event: worstText(characters: TimerListState.maxTextLength),
        location: worstText(characters: TimerListState.maxTextLength),
        remainingS: TimerListState.maxRemainingS, status: .finished, viewers: big)

    static let worstDispatch = Dispatch(
        id: big, model: "TearDrop", path: String(repeating: "AB", count: Starport.maxPathStations / 2),
        distanceKM: big, durationS: big, departsAt: latest, arrivesAt: latest, status: .scheduled,
        createdBy: worstText(characters: 100), note: worstText(characters: StarportState.maxNoteLength))

    static let worstLap = Lap(lap: big, timeMS: big)

    /// The bytes one more item adds to a state's JSON (its comma included).
    static func bytesPerItem<State: ChannelBehaviour>(_ one: State, _ two: State) throws -> Int {
        let now = Date(timeIntervalSince1970: 0)
        return try RawJSON(encoding: two.wireState(at: now)).text.utf8.count
            - RawJSON(encoding: one.wireState(at: now)).text.utf8.count
    }

    @Test("the worst-case text keeps the text rule and escapes to 5 × N + 2 bytes")
    func worstTextEscapes() throws {
        for n in [1, 2, 64, 100] {
            let text = Self.worstText(characters: n)
            #expect(text.count == n && text.utf8.count == 4 * n)
            #expect(try RawJSON(encoding: JSONValue.string(text)).text.utf8.count == 5 * n + 2)
        }
        // A character holds at most one `"` or `\`: what makes 5 × N the bound.
        for text in ["\"\u{301}\"", "\\\u{200D}\"", "\u{600}\"", "\"\u{FE0F}\\"] {
            let escapes = text.utf8.filter { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }.count
            #expect(escapes <= text.count, "\(text.unicodeScalars.map { $0.value })")
        }
    }

    @Test("a timer: maxItemBytes and timer_updated's maxEventDataBytes, exactly")
    func timers() throws {
        let one = TimerListState(timers: [Self.worstTimer])
        var second = Self.worstTimer
        second.id = Self.big - 1
        let two = TimerListState(timers: [second, Self.worstTimer])
        #expect(try Self.bytesPerItem(one, two) == TimerListState.maxItemBytes)
        let events: [TimerEvent] = [.added(Self.worstTimer), .updated(Self.worstTimer, fields: ["event", "location", "remaining_s"]),
                                    .started(id: Self.big, remainingS: Self.big), .removed(id: Self.big)]
        let sizes = try events.map { try RawJSON(writing: $0).text.utf8.count }
        #expect(sizes.max() == TimerListState.maxEventDataBytes, "\(sizes)")
    }

    @Test("a dispatch: maxItemBytes and dispatched's maxEventDataBytes, exactly")
    func dispatches() throws {
        let one = StarportState(dispatches: [Self.worstDispatch])
        var first = Self.worstDispatch
        first.id = Self.big - 1
        let two = StarportState(dispatches: [first, Self.worstDispatch])
        #expect(try Self.bytesPerItem(one, two) == StarportState.maxItemBytes)
        let events: [StarportEvent] = [.dispatched(Self.worstDispatch), .cancelled(id: Self.big),
                                       .statusChanged(Dispatch.StatusChange(id: Self.big, status: .inFlight, at: ISOTime.latest))]
        let sizes = try events.map { try RawJSON(writing: $0).text.utf8.count }
        #expect(sizes.max() == StarportState.maxEventDataBytes, "\(sizes)")
    }

    @Test("a lap: maxItemBytes and lap_completed's maxEventDataBytes, exactly")
    func laps() throws {
        let one = LapSessionState(laps: [Self.worstLap])
        let two = LapSessionState(laps: [Self.worstLap, Self.worstLap])
        #expect(try Self.bytesPerItem(one, two) == LapSessionState.maxItemBytes)
        let moment = "9999-12-31T23:59:59.999Z"
        let events: [LapEvent] = [
            .started(runningSince: moment, lapNumber: Self.big, lapElapsedMS: Self.big, totalElapsedMS: Self.big),
            .stopped(lapElapsedMS: Self.big, totalElapsedMS: Self.big),
            .lapCompleted(Self.worstLap, statistics: LapStatistics(averageMS: Self.big, bestMS: Self.big, worstMS: Self.big),
                          lapNumber: Self.big, totalElapsedMS: Self.big, completedAt: moment),
        ]
        let sizes = try events.map { try RawJSON(writing: $0).text.utf8.count }
        #expect(sizes.max() == LapSessionState.maxEventDataBytes, "\(sizes)")
    }

    @Test("a DeLorean's largest event data: maxEventDataBytes, exactly")
    func delorean() throws {
        let latest = Self.latest
        let events: [DeLoreanEvent] = [.destinationSet(destinationTime: latest), .accelerationStarted,
                                       .timeTravel(lastDeparted: latest, presentTime: latest),
                                       .accelerationAborted(reason: "server_restart")]
        let sizes = try events.map { try RawJSON(writing: $0).text.utf8.count }
        #expect(sizes.max() == DeLoreanState.maxEventDataBytes, "\(sizes)")
        #expect(DeLoreanState.maxItemBytes == 0 && DeLoreanState.initialState(now: Date()).itemCount == 0)
    }
}
