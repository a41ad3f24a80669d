import Dispatch
import Synchronization

/// The cluster's self-test for nats-server#4320 (design §5, "failover race"):
/// two writers, on two connections (to two servers of the cluster when two
/// URLs are given), publish to one subject at the same moment with the same
/// expected last subject sequence, round after round. A fit server accepts
/// exactly one of each pair; 2.9.10 accepted both in 264 of 300 rounds.
public struct CASRaceCheck: Sendable {
    /// What a run saw.
    public struct Result: Sendable, Equatable {
        /// Rounds run.
        public var rounds: Int
        /// Rounds in which both writers were accepted: must be 0.
        public var doubleAccepts: Int
        /// Rounds in which exactly one writer was accepted.
        public var singleAccepts: Int
        /// Rounds in which neither was (a timeout or other error; re-read and continued).
        public var failedRounds: Int
    }

    /// Writer 1's servers, writer 2's servers.
    public var urls: (String, String)
    /// The test stream (created if absent) and its one subject.
    public var stream = "OT_CASRACE"
    /// The subject both writers publish to.
    public var subject = "ot.casrace.probe"
    /// Copies of the test stream: 3 in a 3-node cluster.
    public var replicas: Int
    /// The wait for each ack.
    public var timeout: Duration = .seconds(2)

    /// A check with writer 1 on `first` and writer 2 on `second` (the same
    /// URL list for both on a single server).
    public init(first: String, second: String, replicas: Int) {
        urls = (first, second)
        self.replicas = replicas
    }

    /// Runs `rounds` rounds and reports them. Throws only when a connection,
    /// the stream, or reading the subject's last sequence fails.
    public func run(rounds: Int) throws(NATSError) -> Result {
        guard rounds > 0 else { throw .invalidArgument("CAS race check: \(rounds) rounds; give at least 1") }
        let writers = try [urls.0, urls.1].enumerated().map { (index, urls) throws(NATSError) -> JetStream in
            try JetStream(NATSConnection(NATSConnectionOptions(urls: urls, name: "ot-casrace-\(index + 1)")), timeout: timeout)
        }
        defer { writers.forEach { $0.connection.close() } }
        var config = StreamConfig(name: stream, subjects: [subject])
        config.replicas = replicas
        config.storage = .memory
        try writers[0].ensureStream(config)
        var result = Result(rounds: rounds, doubleAccepts: 0, singleAccepts: 0, failedRounds: 0)
        var last = try writers[0].lastMessage(stream: stream, subject: subject)?.streamSequence ?? 0
        for round in 0..<rounds {
            let acks = Mutex<[UInt64]>([])
            let expectedSeq = last
            let expected: ExpectedSequence = expectedSeq == 0 ? .empty : .sequence(expectedSeq)
            DispatchQueue.concurrentPerform(iterations: 2) { writer in
                let options = PublishOptions(msgID: "casrace-\(round)-\(writer)-\(expectedSeq)", expectedLastSubjectSequence: expected)
                if let ack = try? writers[writer].publish(subject, data: Array("round \(round)".utf8), options: options) {
                    acks.withLock { $0.append(ack.sequence) }
                }
            }
            let accepted = acks.withLock { $0 }
            switch accepted.count {
            case 2: result.doubleAccepts += 1
            case 1: result.singleAccepts += 1
            default: result.failedRounds += 1
            }
            if let highest = accepted.max() {
                last = highest
            } else {
                last = try writers[0].lastMessage(stream: stream, subject: subject)?.streamSequence ?? 0
            }
        }
        return result
    }
}
