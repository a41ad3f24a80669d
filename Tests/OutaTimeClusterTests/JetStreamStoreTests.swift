import NATS
import NATSTestSupport
import OutaTimeCluster
import OutaTimeStore
import Foundation
import Synchronization
import Testing

/// A JetStreamStore on a real nats-server, with its reported outcomes.
final class StoreFixture: Sendable {
    let server: NATSServerProcess
    let commits = Collector<StoreCommit>()
    let store: JetStreamStore

    init(server: NATSServerProcess? = nil, historyLimit: Int = 1000, ackTimeout: Duration = .seconds(5), startsPaused: Bool = false) throws {
        self.server = try server ?? NATSServerProcess.start()
        let commits = commits
        store = try JetStreamStore(servers: self.server.url, historyLimit: historyLimit, partitions: 2,
                                   ackTimeout: ackTimeout, startsPaused: startsPaused) { commits.add(contentsOf: $0) }
    }

    /// Submits and waits for the outcome of `ticket`.
    @discardableResult
    func commit(_ writes: [StoreWrite], ticket: UInt64) -> StoreCommit? {
        store.submit(writes, ticket: ticket)
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if let found = commits.snapshot.first(where: { $0.ticket == ticket }) { return found }
            _ = commits.wait(for: commits.count + 1, timeout: .milliseconds(200))
        }
        return nil
    }

    func stop() {
        store.close()
        server.stop()
    }
}

extension Collector {
    func add(contentsOf values: [Value]) { values.forEach(add) }
}

func event(_ channel: String, _ seq: Int64, _ name: String = "lap_recorded") -> EventRecord {
    EventRecord(channel: channel, seq: seq, event: name, data: JSONText("{\"n\":\(seq),\"s\":\"a \\\"q\\\" é\"}"), at: "2026-11-27T20:00:0\(seq % 10)Z")
}

func append(_ channel: String, _ seqs: ClosedRange<Int64>, state: String? = nil) -> StoreWrite {
    .appendEvents(channel: channel, seq: seqs.upperBound, state: state.map { JSONText($0) }, events: seqs.map { event(channel, $0) })
}

func create(_ channel: String, state: String = "{}") -> StoreWrite {
    .createChannel(ChannelRecord(name: channel, kind: String(channel.prefix { $0 != "/" }), seq: 0, state: state))
}

@Suite("JetStreamStore")
struct JetStreamStoreTests {
    @Test("create, append and load: the channel, its seq, its state and its events")
    func createAppendLoad() throws {
        let fixture = try StoreFixture()
        defer { fixture.stop() }
        let channel = "laps/my.run"
        #expect(fixture.commit([create(channel, state: "{\"v\":0}")], ticket: 1)?.succeeded == true)
        #expect(fixture.commit([append(channel, 1...2, state: "{\"v\":2}")], ticket: 2)?.succeeded == true)
        #expect(fixture.commit([append(channel, 3...3)], ticket: 3)?.succeeded == true)
        #expect(fixture.commit([create("timers/b")], ticket: 4)?.succeeded == true)
        let record = try #require(try fixture.store.channel(named: channel))
        #expect(record.seq == 3)
        #expect(record.kind == "laps")
        #expect(record.stateSeq <= record.seq)
        let loaded = try fixture.store.loadChannels()
        #expect(loaded.map(\.name) == ["laps/my.run", "timers/b"])
        #expect(loaded[1].seq == 0 && loaded[1].state == "{}")
        let history = try fixture.store.history(channel: channel, after: 0, through: .max, limit: 10)
        #expect(history == (1...3).map { event(channel, $0) })
        #expect(try fixture.store.channel(named: "laps/none") == nil)
        #expect(try fixture.store.oldestRetainedSeq(channel: channel) == 1)
        #expect(try fixture.store.oldestRetainedSeq(channel: "timers/b") == nil)
        #expect(fixture.store.backendName == "jetstream")
        #expect(fixture.store.textBytesWritten > 0)
        #expect(fixture.store.stats.writesCommitted == 4)
    }

    @Test("history pages with after, stops at through; every state given is the snapshot; the subject keeps more than the history limit")
    func historyAndSnapshots() throws {
        let fixture = try StoreFixture(historyLimit: 5)
        defer { fixture.stop() }
        let channel = "timers/hill-valley"
        #expect(fixture.commit([create(channel)], ticket: 0)?.succeeded == true)
        for seq in Int64(1)...8 {
            let state = seq.isMultiple(of: 3) ? "{\"at\":\(seq)}" : nil
            #expect(fixture.commit([append(channel, seq...seq, state: state)], ticket: UInt64(seq))?.succeeded == true)
        }
        // 8 messages, history limit 5: none discarded (the subject keeps
        // messagesBeyondHistory more, so the events after a state stay).
        #expect(try fixture.store.oldestRetainedSeq(channel: channel) == 1)
        let page1 = try fixture.store.history(channel: channel, after: 3, through: .max, limit: 2)
        #expect(page1.map(\.seq) == [4, 5])
        let page2 = try fixture.store.history(channel: channel, after: 5, through: 7, limit: 10)
        #expect(page2.map(\.seq) == [6, 7])
        #expect(try fixture.store.history(channel: channel, after: 8, through: .max, limit: 10).isEmpty)
        #expect(try fixture.store.history(channel: channel, after: 2, through: 3, limit: 10).map(\.seq) == [3])
        let record = try #require(try fixture.store.channel(named: channel))
        #expect(record.seq == 8)
        // The last state given (seq 6) is the snapshot; 7 and 8 follow it.
        #expect(record.stateSeq == 6)
        #expect(record.state == "{\"at\":6}")
    }

    @Test("a gap, an overlap, a misnumbered event and an unknown channel are refused, naming the seqs")
    func refusals() throws {
        let fixture = try StoreFixture()
        defer { fixture.stop() }
        let channel = "starport/dock-1"
        #expect(fixture.commit([create(channel)], ticket: 1)?.succeeded == true)
        #expect(fixture.commit([append(channel, 1...2)], ticket: 2)?.succeeded == true)
        #expect(fixture.commit([append(channel, 4...4)], ticket: 3)?.error == .refused(.seqMismatch(channel: channel, expected: 3, stored: 2)))
        #expect(fixture.commit([append(channel, 2...2)], ticket: 4)?.error == .refused(.seqMismatch(channel: channel, expected: 1, stored: 2)))
        let wrong = StoreWrite.appendEvents(channel: channel, seq: 4, state: nil, events: [event(channel, 3), event(channel, 5)])
        guard case .refused(.invalidEvents) = fixture.commit([wrong], ticket: 5)?.error else {
            Issue.record("a misnumbered event must be refused as invalidEvents")
            return
        }
        #expect(fixture.commit([append("laps/ghost", 1...1)], ticket: 6)?.error == .refused(.unknownChannel("laps/ghost")))
        #expect(fixture.commit([create(channel)], ticket: 7)?.succeeded == false)
        #expect(fixture.commit([.dropEmptyChannel(channel)], ticket: 8)?.error == .refused(.notEmpty(channel: channel, seq: 2)))
        #expect(fixture.commit([create("laps/empty"), .dropEmptyChannel("laps/empty")], ticket: 9)?.succeeded == true)
        #expect(try fixture.store.channel(named: "laps/empty") == nil)
        #expect(fixture.commit([.setMeta(key: "last alive", value: "2026-11-27T20:00:00Z")], ticket: 10)?.succeeded == true)
        #expect(try fixture.store.meta("last alive") == "2026-11-27T20:00:00Z")
        #expect(try fixture.store.meta("never") == nil)
        #expect(try fixture.store.history(channel: channel, after: 0, through: .max, limit: 10).map(\.seq) == [1, 2])
    }

    @Test("a state stored with a message that also holds later events (queued appends merged): history after the state's seq has every later event")
    func snapshotInsideMergedMessage() throws {
        let fixture = try StoreFixture(startsPaused: true)
        defer { fixture.stop() }
        let channel = "laps/merged"
        fixture.store.submit([create(channel)], ticket: 1)
        fixture.store.submit([append(channel, 1...1)], ticket: 2)
        // The state as of seq 2 goes with events 2…2, then 3 and 4 queue behind it: one message holds 2…4.
        fixture.store.submit([append(channel, 2...2, state: "{\"as_of\":2}")], ticket: 3)
        fixture.store.submit([append(channel, 3...3)], ticket: 4)
        fixture.store.submit([append(channel, 4...4)], ticket: 5)
        fixture.store.resume()
        #expect(fixture.commits.wait(for: 5, timeout: .seconds(10)).allSatisfy { $0.succeeded })
        let record = try #require(try fixture.store.channel(named: channel))
        #expect(record.seq == 4 && record.stateSeq == 2, "\(record)")
        // What a node taking the channel over replays: every event after the state.
        #expect(try fixture.store.history(channel: channel, after: record.stateSeq, through: record.seq, limit: 10).map(\.seq) == [3, 4])
        #expect(try fixture.store.history(channel: channel, after: 3, through: 4, limit: 10).map(\.seq) == [4])
    }

    @Test("outcomes per channel in submission order; a channel's queued appends merge into one message")
    func orderAndMerging() throws {
        let fixture = try StoreFixture(startsPaused: true)
        defer { fixture.stop() }
        let channels = ["laps/a", "laps/b"]
        var ticket: UInt64 = 0
        for channel in channels {
            ticket += 1
            fixture.store.submit([create(channel)], ticket: ticket)
        }
        for seq in Int64(1)...20 {
            for channel in channels {
                ticket += 1
                fixture.store.submit([append(channel, seq...seq)], ticket: ticket)
            }
        }
        #expect(fixture.store.backlog == 42)
        fixture.store.resume()
        let reported = fixture.commits.wait(for: 42, timeout: .seconds(10))
        #expect(reported.count == 42)
        #expect(reported.allSatisfy { $0.succeeded })
        for (index, channel) in channels.enumerated() {
            let tickets = reported.map(\.ticket).filter { $0 % 2 == UInt64((index + 1) % 2) }
            #expect(tickets == tickets.sorted(), "\(channel)'s outcomes out of order: \(tickets)")
        }
        #expect(fixture.store.stats.largestBatch >= 20)
        #expect(fixture.store.backlog == 0)
        for channel in channels {
            #expect(try fixture.store.history(channel: channel, after: 0, through: .max, limit: 100).map(\.seq) == Array(1...20))
            // Merged: fewer messages than submissions, all under the channel's subject.
            #expect(try fixture.store.channel(named: channel)?.seq == 20)
        }
    }

    @Test("fencing: a second store's append wins, the first store's stale append is refused by the CAS")
    func fencing() throws {
        let first = try StoreFixture()
        defer { first.stop() }
        let second = try StoreFixture(server: first.server)
        defer { second.store.close() }
        let channel = "delorean/outatime"
        #expect(first.commit([create(channel)], ticket: 1)?.succeeded == true)
        #expect(second.commit([append(channel, 1...1)], ticket: 1)?.succeeded == true)
        // The first store still believes the channel is empty: its seq check
        // passes, and JetStream refuses the publish (10071).
        let refused = first.commit([append(channel, 1...1)], ticket: 2)
        #expect(refused?.error == .refused(.seqMismatch(channel: channel, expected: 0, stored: 1)))
        // Reloaded after the refusal: it continues from the stored seq.
        #expect(first.commit([append(channel, 2...2)], ticket: 3)?.succeeded == true)
        #expect(try first.store.history(channel: channel, after: 0, through: .max, limit: 10).map(\.seq) == [1, 2])
    }

    @Test("restart: a new store on the same server loads what the first stored; a closed store refuses")
    func restart() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let before = try StoreFixture(server: server)
        #expect(before.commit([create("laps/r", state: "{\"v\":0}")], ticket: 1)?.succeeded == true)
        #expect(before.commit([append("laps/r", 1...3, state: "{\"v\":3}")], ticket: 2)?.succeeded == true)
        before.store.close()
        before.store.submit([append("laps/r", 4...4)], ticket: 3)
        #expect(before.commits.snapshot.last == StoreCommit(ticket: 3, error: .writerClosed, batchSize: 0))
        #expect(throws: (any Error).self) { try before.store.loadChannels() }
        let after = try StoreFixture(server: server)
        defer { after.store.close() }
        let loaded = try after.store.loadChannels()
        #expect(loaded.count == 1)
        #expect(loaded.first?.seq == 3)
        // Close wrote the pending state as the snapshot.
        #expect(loaded.first?.state == "{\"v\":3}")
        #expect(loaded.first?.stateSeq == 3)
        #expect(after.commit([append("laps/r", 4...4)], ticket: 1)?.succeeded == true)
        #expect(try after.store.history(channel: "laps/r", after: 2, through: .max, limit: 10).map(\.seq) == [3, 4])
    }

    @Test("a lost ack is retried with the same Msg-Id and CAS, and resolved as stored: no failure, no duplicate")
    func lostAck() throws {
        let fixture = try StoreFixture(ackTimeout: .milliseconds(300))
        defer { fixture.stop() }
        let channel = "laps/lost"
        #expect(fixture.commit([create(channel)], ticket: 1)?.succeeded == true)
        fixture.server.pause()
        fixture.store.submit([append(channel, 1...1)], ticket: 2)
        // The fault: the server stays frozen until the first ack's deadline
        // has passed (the store counts the retry), then comes back.
        let deadline = ContinuousClock.now + .seconds(5)
        while fixture.store.ackRetries == 0 && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.01)  // polling a counter, bounded
        }
        fixture.server.resume()
        let outcome = fixture.commits.wait(for: 2, timeout: .seconds(5)).last
        #expect(outcome == StoreCommit(ticket: 2, error: nil, batchSize: 1))
        #expect(fixture.store.ackRetries >= 1)
        #expect(fixture.store.lostAcksResolved == 1)
        #expect(try fixture.store.history(channel: channel, after: 0, through: .max, limit: 10).map(\.seq) == [1])
        #expect(fixture.commit([append(channel, 2...2)], ticket: 3)?.succeeded == true)
        #expect(try fixture.store.history(channel: channel, after: 0, through: .max, limit: 10).map(\.seq) == [1, 2])
    }

    @Test("close from onCommit (a worker thread) does not wait for itself; later submissions are refused")
    func closeFromOnCommit() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let holder = Mutex<JetStreamStore?>(nil)
        let commits = Collector<StoreCommit>()
        let store = try JetStreamStore(servers: server.url, historyLimit: 10, partitions: 1) { reported in
            holder.withLock { $0 }?.close()
            commits.add(contentsOf: reported)
        }
        holder.withLock { $0 = store }
        defer { holder.withLock { $0 = nil } }
        store.submit([create("laps/c")], ticket: 1)
        #expect(commits.wait(for: 1).first == StoreCommit(ticket: 1, error: nil, batchSize: 1))
        store.submit([create("laps/d")], ticket: 2)
        #expect(commits.wait(for: 2).last == StoreCommit(ticket: 2, error: .writerClosed, batchSize: 0))
        store.close()
    }

    @Test("a submission writing several channels runs after their earlier writes and before their later ones")
    func multiChannelBarrier() throws {
        let fixture = try StoreFixture(startsPaused: true)
        defer { fixture.stop() }
        fixture.store.submit([create("laps/a")], ticket: 1)
        fixture.store.submit([create("laps/b")], ticket: 2)
        fixture.store.submit([.dropEmptyChannel("laps/a"), .dropEmptyChannel("laps/b")], ticket: 3)
        fixture.store.submit([create("laps/b", state: "{\"again\":true}")], ticket: 4)
        fixture.store.submit([append("laps/b", 1...1)], ticket: 5)
        fixture.store.resume()
        let reported = fixture.commits.wait(for: 5)
        #expect(reported.map(\.ticket).sorted() == [1, 2, 3, 4, 5])
        #expect(reported.allSatisfy { $0.succeeded }, "\(reported)")
        let order = reported.map(\.ticket)
        #expect(order.firstIndex(of: 2)! < order.firstIndex(of: 3)!)
        #expect(order.firstIndex(of: 3)! < order.firstIndex(of: 4)!)
        #expect(try fixture.store.loadChannels().map(\.name) == ["laps/b"])
        #expect(try fixture.store.channel(named: "laps/b")?.seq == 1)
    }

    @Test("bad settings and an unreachable server fail at open, naming the value")
    func openFailures() throws {
        let port = try NATSServerProcess.freePort()
        let unreachable = #expect(throws: NATSError.self) {
            try JetStreamStore(servers: "nats://127.0.0.1:\(port)", historyLimit: 10) { _ in }
        }
        #expect("\(unreachable!)".contains("127.0.0.1:\(port)"))
        let limit = #expect(throws: NATSError.self) { try JetStreamStore(servers: "nats://127.0.0.1:1", historyLimit: 0) { _ in } }
        #expect("\(limit!)".contains("historyLimit 0"))
        let urls = #expect(throws: NATSError.self) { try JetStreamStore(servers: "localhost:4222", historyLimit: 10) { _ in } }
        #expect("\(urls!)".contains("localhost:4222"))
    }
}
