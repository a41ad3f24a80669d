import Foundation
import NATSTestSupport
import OutaTimeCluster
import OutaTimeStore
import Testing

/// `JetStreamStore.status`: the NATS link as libnats reports it, and what
/// a write or read meets while the link is down.
@Suite("JetStreamStore link status", .timeLimit(.minutes(2)))
struct LinkStatusTests {
    /// Polls `condition` every 20 ms for up to `timeout`; true once it holds.
    static func eventually(_ timeout: Duration = .seconds(10), _ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            if ContinuousClock.now >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.02)  // polling a status, bounded
        }
        return true
    }

    @Test("connected to the server's URL at start; SQLite has no link")
    func connectedAtStart() throws {
        let fixture = try StoreFixture()
        defer { fixture.stop() }
        let status = fixture.store.status
        #expect(status.backend == "jetstream")
        #expect(status.link == StoreLink(connected: true, url: fixture.server.url))
        #expect(status.outage == nil)

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ot-link-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let sqlite = try SQLiteStore(path: folder.appendingPathComponent("s.sqlite").path, historyLimit: 10) { _ in }
        defer { sqlite.close() }
        #expect(sqlite.status == StoreStatus(backend: "sqlite", link: nil))
    }

    @Test("a frozen server: down within the missed pings, writes and reads fail at once naming the link, then up again with one reconnect and writes go on")
    func frozenServer() throws {
        let fixture = try StoreFixture()
        defer { fixture.stop() }
        let channel = "laps/outage"
        #expect(fixture.commit([create(channel)], ticket: 1)?.succeeded == true)

        fixture.server.pause()
        #expect(Self.eventually { fixture.store.status.link?.connected == false }, "the link stayed up: \(fixture.store.status)")
        let down = try #require(fixture.store.status.link)
        #expect(down.downSince != nil && down.url == fixture.server.url && !down.closed)
        let outage = try #require(fixture.store.status.outage)
        #expect(outage.hasPrefix("the NATS link to \(fixture.server.url) is down since "), "\(outage)")

        // No wait for an ack timeout (5 s here): refused before sending.
        let started = ContinuousClock.now
        let refused = try #require(fixture.commit([append(channel, 1...1)], ticket: 2))
        #expect(ContinuousClock.now - started < .seconds(2), "the write waited \(ContinuousClock.now - started)")
        #expect(refused.error.map { "\($0)" }?.contains("the NATS link to \(fixture.server.url) is down") == true, "\(refused)")
        #expect(throws: StoreFailure.self) { try fixture.store.channel(named: channel) }
        #expect(ContinuousClock.now - started < .seconds(2), "the read waited \(ContinuousClock.now - started)")

        fixture.server.resume()
        #expect(Self.eventually { fixture.store.status.link?.connected == true }, "the link did not come back: \(fixture.store.status)")
        let up = try #require(fixture.store.status.link)
        #expect(up.reconnects == 1 && up.downSince == nil && up.url == fixture.server.url)
        #expect(fixture.commit([append(channel, 1...1)], ticket: 3)?.succeeded == true)
        #expect(try fixture.store.channel(named: channel)?.seq == 1)
    }

    @Test("a killed server: down at once; closing the store marks the link closed")
    func killedServer() throws {
        let fixture = try StoreFixture()
        fixture.server.stop()
        #expect(Self.eventually(.seconds(5)) { fixture.store.status.link?.connected == false })
        fixture.store.close()
        #expect(Self.eventually(.seconds(5)) { fixture.store.status.link?.closed == true })
        #expect(fixture.store.status.outage?.contains("is closed") == true, "\(fixture.store.status)")
    }
}
