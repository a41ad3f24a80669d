import Testing
@testable import outatime_load

/// The in-flight window every pipelining scenario keeps per connection:
/// replies answer the oldest request, in order.
@Suite("outatime-load request window")
struct RequestWindowTests {
    @Test("replies taken in request order, through wrap-around and growth")
    func order() {
        var window = RequestWindow<String>(capacity: 2)
        var next = 0
        var answered: [Int] = []
        // Keep 3 in flight (one more than the starting capacity), 20 requests in all.
        for _ in 0..<3 {
            window.append(id: next, sentNs: UInt64(next), tag: "r\(next)")
            next += 1
        }
        while let oldest = window.oldest {
            let entry = window.removeOldest(answeredBy: oldest.id)
            #expect(entry?.tag == "r\(oldest.id)" && entry?.sentNs == UInt64(oldest.id))
            answered.append(oldest.id)
            if next < 20 {
                window.append(id: next, sentNs: UInt64(next), tag: "r\(next)")
                next += 1
            }
        }
        #expect(answered == Array(0..<20))
        #expect(window.isEmpty && window.count == 0)
    }

    @Test("a reply to anything but the oldest request takes nothing and is described")
    func mismatch() {
        var window = RequestWindow<Void>()
        #expect(window.removeOldest(answeredBy: 1) == nil)
        #expect(window.mismatch(1) == "reply to request 1 with no request in flight")
        window.append(id: 5, sentNs: 0, tag: ())
        window.append(id: 6, sentNs: 0, tag: ())
        #expect(window.removeOldest(answeredBy: 6) == nil)
        #expect(window.count == 2)
        #expect(window.mismatch(6) == "reply to request 6 while request 5 was the oldest in flight")
        #expect(window.removeOldest(answeredBy: 5)?.id == 5)
        #expect(window.removeOldest(answeredBy: 6)?.id == 6)
    }
}
