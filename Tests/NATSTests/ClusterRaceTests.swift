import NATS
import NATSTestSupport
import Testing

@Suite("NATS 3-node cluster", .serialized)
struct ClusterRaceTests {
    @Test("CAS race: two writers on two servers, an R3 stream, never both accepted")
    func casRace() throws {
        let cluster = try NATSClusterProcesses()
        defer { cluster.stop() }
        let check = CASRaceCheck(first: cluster.servers[0].url, second: cluster.servers[1].url, replicas: 3)
        let result = try check.run(rounds: 30)
        #expect(result.rounds == 30)
        #expect(result.doubleAccepts == 0)
        #expect(result.singleAccepts >= 25, "most rounds must have a winner: \(result)")
        let connection = try NATSConnection(NATSConnectionOptions(urls: cluster.urls))
        defer { connection.close() }
        try connection.serverVersion().requireCluster(url: cluster.urls)
        let last = try JetStream(connection).lastMessage(stream: check.stream, subject: check.subject)
        #expect(last?.streamSequence == UInt64(result.singleAccepts + 2 * result.doubleAccepts))
    }
}
