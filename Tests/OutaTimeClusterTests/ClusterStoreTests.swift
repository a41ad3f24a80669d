import NATS
import NATSTestSupport
import OutaTimeCluster
import OutaTimeStore
import Testing

@Suite("JetStreamStore on a 3-node cluster")
struct ClusterStoreTests {
    @Test("R3 streams and buckets; two stores on two servers: the stale writer is fenced by the CAS")
    func replicatedAndFenced() throws {
        let cluster = try NATSClusterProcesses()
        defer { cluster.stop() }
        let firstCommits = Collector<StoreCommit>()
        let first = try JetStreamStore(servers: cluster.servers[0].url, historyLimit: 100, replicas: 3) {
            firstCommits.add(contentsOf: $0)
        }
        defer { first.close() }
        let secondCommits = Collector<StoreCommit>()
        let second = try JetStreamStore(servers: cluster.servers[1].url, historyLimit: 100, replicas: 3) {
            secondCommits.add(contentsOf: $0)
        }
        defer { second.close() }
        let channel = "timers/r3"
        first.submit([create(channel)], ticket: 1)
        #expect(firstCommits.wait(for: 1).first?.succeeded == true)
        first.submit([append(channel, 1...2)], ticket: 2)
        #expect(firstCommits.wait(for: 2).last?.succeeded == true)
        // The second store loads the channel from the cluster and takes over.
        second.submit([.appendEvents(channel: channel, seq: 3, state: nil, events: [event(channel, 3, "timer_started")])], ticket: 1)
        #expect(secondCommits.wait(for: 1).first?.succeeded == true)
        // The first store's cursor is stale. In a cluster JetStream checks
        // the Msg-Id (`<channel>:3`, the second store's) before the CAS and
        // answers "duplicate": the store sees that the stored message is not
        // its own and reports the refusal, never a success.
        first.submit([append(channel, 3...3)], ticket: 3)
        #expect(firstCommits.wait(for: 3).last?.error == .refused(.seqMismatch(channel: channel, expected: 2, stored: 3)))
        #expect(try first.history(channel: channel, after: 0, through: .max, limit: 10).map(\.seq) == [1, 2, 3])
        #expect(try second.channel(named: channel)?.seq == 3)
    }

    @Test("an identical retry (same Msg-Id, same bytes) of a message stored by another connection is acknowledged as stored")
    func identicalDuplicate() throws {
        let cluster = try NATSClusterProcesses()
        defer { cluster.stop() }
        let commits = Collector<StoreCommit>()
        let first = try JetStreamStore(servers: cluster.servers[2].url, historyLimit: 100, replicas: 3) { commits.add(contentsOf: $0) }
        defer { first.close() }
        let other = Collector<StoreCommit>()
        let second = try JetStreamStore(servers: cluster.servers[0].url, historyLimit: 100, replicas: 3) { other.add(contentsOf: $0) }
        defer { second.close() }
        first.submit([create("laps/same")], ticket: 1)
        #expect(commits.wait(for: 1).first?.succeeded == true)
        second.submit([append("laps/same", 1...1)], ticket: 1)
        #expect(other.wait(for: 1).first?.succeeded == true)
        first.submit([append("laps/same", 1...1)], ticket: 2)
        #expect(commits.wait(for: 2).last == StoreCommit(ticket: 2, error: nil, batchSize: 1))
        #expect(first.lostAcksResolved == 1)
        #expect(try first.history(channel: "laps/same", after: 0, through: .max, limit: 10).map(\.seq) == [1])
    }
}
