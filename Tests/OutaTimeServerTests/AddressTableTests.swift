@testable import OutaTimeServer
import Testing

/// The per-address bookkeeping behind `--max-connections-per-address` and
/// `--max-failed-hellos`, on loop times given by the test.
@Suite("address table")
struct AddressTableTests {
    @Test("a lockout starts at the limit, names the time left and ends with the window")
    func lockoutWindow() {
        var table = AddressTable()
        for now: UInt64 in [1_000, 1_100] { table.helloFailed(from: "10.0.0.1", now: now, windowMs: 500) }
        #expect(table.lockout(of: "10.0.0.1", now: 1_200, limit: 3) == nil)
        table.helloFailed(from: "10.0.0.1", now: 1_200, windowMs: 500)
        // Fixed window from the first failure: ends at 1,500.
        #expect(table.lockout(of: "10.0.0.1", now: 1_200, limit: 3) == 300)
        #expect(table.lockout(of: "10.0.0.1", now: 1_499, limit: 3) == 1)
        #expect(table.lockout(of: "10.0.0.1", now: 1_500, limit: 3) == nil)
        #expect(table.lockout(of: "10.0.0.2", now: 1_200, limit: 3) == nil)
        // A failure after the window starts a new one, counted from 1.
        table.helloFailed(from: "10.0.0.1", now: 1_600, windowMs: 500)
        #expect(table.lockout(of: "10.0.0.1", now: 1_600, limit: 1) == 500)
        #expect(table.lockout(of: "10.0.0.1", now: 1_600, limit: 2) == nil)
    }

    @Test("an entry goes once it has neither connections nor a running failure window")
    func entriesForgotten() {
        var table = AddressTable()
        table.connectionOpened(from: "10.0.0.1")
        table.helloFailed(from: "10.0.0.1", now: 0, windowMs: 100)
        table.helloFailed(from: "10.0.0.2", now: 0, windowMs: 100)
        #expect(table.count == 2)
        // The connection closes while the window runs: the entry stays.
        table.connectionClosed(from: "10.0.0.1", now: 50)
        table.forgetExpiredFailures(now: 50)
        #expect(table.count == 2)
        #expect(table.lockout(of: "10.0.0.1", now: 50, limit: 1) == 50)
        table.forgetExpiredFailures(now: 100)
        #expect(table.count == 0)
        // A connection keeps its entry after its window ended.
        table.connectionOpened(from: "10.0.0.3")
        table.helloFailed(from: "10.0.0.3", now: 200, windowMs: 100)
        table.forgetExpiredFailures(now: 300)
        #expect(table.count == 1)
        #expect(table.connections(of: "10.0.0.3") == 1)
        #expect(table.lockout(of: "10.0.0.3", now: 300, limit: 1) == nil)
        table.connectionClosed(from: "10.0.0.3", now: 300)
        #expect(table.count == 0)
    }
}
