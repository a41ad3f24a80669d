import Foundation
import OutaTimeProtocol
import Testing
@testable import OutaTimeDomain

/// The timers' own reader of stored lists (``TimerListState/decodeStored(jsonText:)``)
/// reads what `Codable` reads, and refuses what it refuses.
@Suite struct TimerStoredDecodingTests {
    /// Lists of every status, with and without `next_id` and locations.
    static func lists() -> [TimerListState] {
        var lists: [TimerListState] = [.initial]
        for size in [1, 7, 300] {
            let timers = (1...size).map { n in
                CountdownTimer(id: n * 2, event: "event \(n) ✓", location: n.isMultiple(of: 3) ? "" : "place \(n)",
                               remainingS: n * 37, status: CountdownTimer.Status.allCases[n % 3],
                               viewers: n % 3 == 1 ? 2 : 0)
            }
            lists.append(TimerListState(timers: timers))
            lists.append(TimerListState(timers: timers, nextID: size * 2 + 50))
        }
        return lists
    }

    @Test("every stored list reads back equal to Codable's reading")
    func sameAsCodable() throws {
        for list in Self.lists() {
            let text = list.jsonText()
            let fast = try TimerListState.decodeStored(jsonText: text)
            let codable = try JSONDecoder().decode(TimerListState.self, from: Data(text.utf8))
            #expect(fast == codable, "\(text.prefix(200))")
            #expect(fast.jsonText() == text)
            #expect(fast.nextID == list.nextID)
        }
    }

    @Test("malformed stored lists are refused with the timers kind and a reason", arguments: [
        "[]", #"{"timers":{}}"#, #"{"timers":[{"id":1}]}"#, #"{"timers":[{"id":1,"event":"e","remaining_s":5,"status":"later"}]}"#,
        "{", #"{"next_id":3}"#,
    ])
    func refused(_ text: String) {
        #expect(throws: StateDecodingError.self) { try TimerListState.decodeStored(jsonText: text) }
        #expect((try? TimerListState.decodeStored(jsonText: text)) == nil)
    }
}
