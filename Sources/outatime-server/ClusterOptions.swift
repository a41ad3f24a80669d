import ArgumentParser
import Foundation
import Logging
import OutaTimeCluster
import OutaTimeServer

/// `--cluster` and its companions: cluster mode on NATS JetStream
/// (docs/CLUSTER.md). Without `--cluster` the server is a single node
/// with SQLite, and the others are refused.
struct ClusterOptions: ParsableArguments {
    @Option(help: ArgumentHelp("""
        Cluster mode: keep durable state in NATS JetStream on these servers instead of the SQLite --db \
        (URLs separated by commas, e.g. nats://10.0.0.1:4222,nats://10.0.0.2:4222; each must be \
        nats-server 2.9.21 or later, checked at start with a self-test). Every node started on the \
        same NATS shares every channel: each channel is served by one owner node, requests reaching \
        another node are forwarded to it, and another node takes over within seconds when it dies \
        (docs/CLUSTER.md).
        """, valueName: "urls"))
    var cluster: String?

    @Option(help: ArgumentHelp("""
        This node's name in the cluster (1 to 32 of A-Z a-z 0-9 _ -; unique per node); hello \
        answers it as 'node'. Default: the host name, other characters as '-'. Needs --cluster.
        """, valueName: "name"))
    var node: String?

    @Option(help: ArgumentHelp("""
        Copies of each JetStream stream and bucket: 3 for a 3-server NATS cluster, 1 for a single \
        nats-server. Needs --cluster.
        """, valueName: "n"))
    var clusterReplicas = 3

    @Option(help: ArgumentHelp("""
        Rounds of the start-up self-test in which two writers race with the same expected sequence \
        (a server that accepts both cannot fence a stale owner; 0 skips it). Needs --cluster.
        """, valueName: "n"))
    var clusterSelfTestRounds = 100

    /// The settings, or nil without `--cluster`; a usage error names the flag.
    func settings() throws -> ClusterSettings? {
        guard let cluster else {
            if node != nil { throw ValidationError("--node needs --cluster") }
            return nil
        }
        do {
            var settings = ClusterSettings(servers: try ClusterBootstrap.servers(from: cluster),
                                           node: node ?? ClusterSettings.nodeName(fromHost: ProcessInfo.processInfo.hostName))
            try ClusterSettings.validateNodeName(settings.node)
            guard (1...5).contains(clusterReplicas) else {
                throw ValidationError("--cluster-replicas \(clusterReplicas) is out of range (1…5; 3 for a 3-server NATS cluster)")
            }
            guard (0...10_000).contains(clusterSelfTestRounds) else {
                throw ValidationError("--cluster-self-test-rounds \(clusterSelfTestRounds) is out of range (0…10000)")
            }
            settings.replicas = clusterReplicas
            settings.selfTestRounds = clusterSelfTestRounds
            return settings
        } catch let error as ClusterSetupError {
            throw ValidationError("\(error)")
        }
    }

    /// Puts cluster mode into `config`: the node's name, and JetStream as the
    /// storage, opened when the server starts (after ``join(_:config:logger:)``).
    static func apply(_ settings: ClusterSettings, to config: inout ServerConfig) {
        config.node = settings.node
        config.storage = .custom { opening in
            try JetStreamStore(servers: settings.serverList, historyLimit: opening.historyLimit,
                               partitions: settings.partitions, replicas: settings.replicas,
                               name: "outatime-\(settings.node)", onCommit: opening.onCommit)
        }
    }

    /// At start, before the server opens its store: checks the NATS servers
    /// (version at least 2.9.21, the CAS self-test), then makes the fabric
    /// through which the node takes its share of the slots, forwards
    /// requests and relays pushes. Throws naming what failed.
    static func join(_ settings: ClusterSettings, config: inout ServerConfig, logger: Logger) throws {
        let report = try ClusterBootstrap.check(settings)
        logger.info("nats cluster checked", metadata: [
            "node": "\(settings.node)",
            "servers": "\(report.versions.map { "\($0.url) (\($0.version))" }.joined(separator: ", "))",
            "unreachable": "\(report.unreachable.joined(separator: ", "))",
            "cas_self_test": "\(report.selfTest.map { "\($0.singleAccepts)/\($0.rounds) single, \($0.doubleAccepts) double" } ?? "skipped")",
        ])
        config.fabric = try NATSClusterFabric(options: ClusterFabricOptions(settings: settings))
    }
}
