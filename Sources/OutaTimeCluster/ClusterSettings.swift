import NATS

/// How one OutaTime node joins a cluster (`outatime-server --cluster …`).
public struct ClusterSettings: Sendable, Equatable {
    /// The NATS servers, `nats://host:port` each; the node connects to any of
    /// them and fails over between them.
    public var servers: [String]
    /// This node's name: unique in the cluster, used in subjects, keys and
    /// session ids (``validateNodeName(_:)``).
    public var node: String
    /// Copies of every stream and bucket: 3 in a 3-server NATS cluster, 1
    /// on a single server (tests, a trial on one machine).
    public var replicas: Int = 3
    /// Event streams channels are spread over (design §4.2), so that their
    /// leaders spread over the NATS servers.
    public var partitions: Int = 3
    /// Rounds of the CAS race self-test run before serving (0: none).
    public var selfTestRounds: Int = 100

    /// Settings for `node` on `servers`, with the defaults above.
    public init(servers: [String], node: String) {
        self.servers = servers
        self.node = node
    }

    /// The servers as libnats takes them: one comma-separated list.
    public var serverList: String { servers.joined(separator: ",") }

    /// Longest node name: it appears in stream names and subjects.
    public static let maxNodeNameLength = 32

    /// A node name is 1 to 32 of `A–Z a–z 0–9 _ -`: it becomes a NATS
    /// subject token, a key-value key and part of a stream name, where `.`,
    /// `*`, `>` and spaces have meanings of their own.
    public static func validateNodeName(_ name: String) throws(ClusterSetupError) {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        guard !name.isEmpty, name.utf8.count <= maxNodeNameLength, allowed else {
            throw .badNodeName(name)
        }
    }

    /// A node name made from a host name: every character outside the
    /// allowed set becomes `-`, cut to the longest allowed length.
    public static func nodeName(fromHost host: String) -> String {
        let mapped = String(host.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "-")
                ? Character(scalar) : "-"
        })
        let cut = String(mapped.prefix(maxNodeNameLength))
        return cut.isEmpty ? "node" : cut
    }
}

/// Why a node did not join its cluster.
public enum ClusterSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `--node` is not a usable name.
    case badNodeName(String)
    /// `--cluster` gave no server, or a value that is not a `nats://` URL.
    case badServers(String)
    /// No NATS server of the list answered.
    case noServerReachable(servers: String, reason: String)
    /// A NATS server is older than cluster mode needs.
    case serverTooOld(url: String, found: String, minimum: String)
    /// The CAS race self-test saw both of two concurrent writers accepted.
    case casRaceFailed(doubleAccepts: Int, rounds: Int, servers: String)
    /// The self-test could not run (a connection or the test stream failed).
    case selfTestFailed(String)

    /// One line naming the value and what is allowed.
    public var description: String {
        switch self {
        case .badNodeName(let name):
            "--node '\(name)': give 1 to \(ClusterSettings.maxNodeNameLength) characters of A-Z, a-z, 0-9, '_' and '-' (it is used in NATS subjects and keys)"
        case .badServers(let value):
            "--cluster '\(value)': give one or more NATS server URLs separated by commas, e.g. nats://10.0.0.1:4222,nats://10.0.0.2:4222"
        case .noServerReachable(let servers, let reason):
            "no NATS server of \(servers) answered: \(reason)"
        case .serverTooOld(let url, let found, let minimum):
            "the NATS server at \(url) is nats-server \(found); cluster mode needs \(minimum) or later (older servers can accept two writers at the same expected sequence: nats-server#4320, docs/CLUSTER.md)"
        case .casRaceFailed(let doubleAccepts, let rounds, let servers):
            "the NATS cluster at \(servers) accepted both of two concurrent writers with the same expected sequence in \(doubleAccepts) of \(rounds) rounds: it cannot fence a stale owner; upgrade nats-server (docs/CLUSTER.md)"
        case .selfTestFailed(let reason):
            "the CAS race self-test could not run: \(reason)"
        }
    }
}
