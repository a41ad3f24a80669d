import Foundation
import NATS

/// What a node checks before it serves in cluster mode: that the NATS
/// servers can fence a stale writer. Blocking; run it before the loop starts.
public enum ClusterBootstrap {
    /// What the checks found, for the start-up log.
    public struct Report: Sendable, Equatable {
        /// Each reachable server's URL and version.
        public var versions: [(url: String, version: NATSServerVersion)]
        /// Servers that did not answer (the node still starts with one).
        public var unreachable: [String]
        /// The self-test's result, nil when it was switched off.
        public var selfTest: CASRaceCheck.Result?

        public static func == (lhs: Report, rhs: Report) -> Bool {
            lhs.versions.map(\.url) == rhs.versions.map(\.url) && lhs.versions.map(\.version) == rhs.versions.map(\.version)
                && lhs.unreachable == rhs.unreachable && lhs.selfTest == rhs.selfTest
        }
    }

    /// Checks every server of `settings` that answers (at least one must):
    /// each must be nats-server ≥ 2.9.21 (``NATSServerVersion/clusterMinimum``);
    /// then runs the CAS race self-test (design §5) on the first two
    /// servers, in a stream of this node's own (`OT_CASRACE_<node>`, in
    /// memory), and refuses when any round accepted both writers.
    public static func check(_ settings: ClusterSettings) throws(ClusterSetupError) -> Report {
        try ClusterSettings.validateNodeName(settings.node)
        guard !settings.servers.isEmpty else { throw .badServers("") }
        var report = Report(versions: [], unreachable: [], selfTest: nil)
        var reasons: [String] = []
        for url in settings.servers {
            do {
                var options = NATSConnectionOptions(servers: [url], name: "outatime-\(settings.node)-check")
                options.connectTimeout = .seconds(2)
                options.maxReconnect = 0
                let connection = try NATSConnection(options)
                defer { connection.close() }
                let version = try connection.serverVersion()
                guard version >= NATSServerVersion.clusterMinimum else {
                    throw ClusterSetupError.serverTooOld(url: url, found: "\(version)",
                                                         minimum: "\(NATSServerVersion.clusterMinimum)")
                }
                report.versions.append((url, version))
            } catch let error as ClusterSetupError {
                throw error
            } catch {
                report.unreachable.append(url)
                reasons.append("\(url): \(error)")
            }
        }
        guard let first = report.versions.first?.url else {
            throw .noServerReachable(servers: settings.serverList, reason: reasons.joined(separator: "; "))
        }
        guard settings.selfTestRounds > 0 else { return report }
        let second = report.versions.count > 1 ? report.versions[1].url : first
        var race = CASRaceCheck(first: first, second: second, replicas: min(settings.replicas, report.versions.count))
        race.stream = "OT_CASRACE_\(settings.node)"
        race.subject = "ot.casrace.\(settings.node)"
        let result: CASRaceCheck.Result
        do {
            result = try race.run(rounds: settings.selfTestRounds)
        } catch {
            throw .selfTestFailed("\(error)")
        }
        guard result.doubleAccepts == 0 else {
            throw .casRaceFailed(doubleAccepts: result.doubleAccepts, rounds: result.rounds, servers: settings.serverList)
        }
        report.selfTest = result
        return report
    }

    /// Parses `--cluster`: URLs separated by commas, each `nats://host:port`
    /// (or `host:port`, taken as `nats://`).
    public static func servers(from value: String) throws(ClusterSetupError) -> [String] {
        let parts = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !parts.isEmpty, parts.allSatisfy({ !$0.isEmpty }) else { throw .badServers(value) }
        return try parts.map { (part: String) throws(ClusterSetupError) -> String in
            let url = part.contains("://") ? part : "nats://\(part)"
            guard url.hasPrefix("nats://") || url.hasPrefix("tls://"),
                  let hostPort = url.split(separator: "/").last, hostPort.contains(":"),
                  let port = Int(hostPort.split(separator: ":").last ?? ""), (1...65_535).contains(port)
            else { throw .badServers(value) }
            return url
        }
    }
}
