/// A nats-server release, such as `2.15.1`, ordered by its numbers.
public struct NATSServerVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The major number.
    public var major: Int
    /// The minor number.
    public var minor: Int
    /// The patch number.
    public var patch: Int

    /// The oldest server cluster mode accepts: 2.9.21 checks
    /// `Nats-Expected-Last-Subject-Sequence` inside Raft (nats-server#4320;
    /// 2.9.10 accepted both concurrent writers in 264 of 300 rounds).
    public static let clusterMinimum = NATSServerVersion(major: 2, minor: 9, patch: 21)

    /// A version from its numbers.
    public init(major: Int, minor: Int, patch: Int) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    /// Parses `2.15.1`, `v2.15.1` or `2.11.0-RC.1` (the suffix is ignored);
    /// nil for anything else.
    public init?(_ text: String) {
        var core = Substring(text)
        if core.first == "v" { core = core.dropFirst() }
        if let dash = core.firstIndex(where: { $0 == "-" || $0 == "+" }) { core = core[..<dash] }
        let parts = core.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let major = Int(parts[0]), let minor = Int(parts[1]), let patch = Int(parts[2]),
              major >= 0, minor >= 0, patch >= 0
        else { return nil }
        self.init(major: major, minor: minor, patch: patch)
    }

    /// Throws ``NATSError/serverTooOld(found:minimum:url:)`` when this
    /// version is older than ``clusterMinimum``.
    public func requireCluster(url: String) throws(NATSError) {
        if self < Self.clusterMinimum {
            throw .serverTooOld(found: self, minimum: Self.clusterMinimum, url: url)
        }
    }

    /// `major.minor.patch`.
    public var description: String { "\(major).\(minor).\(patch)" }

    /// Ordered by major, then minor, then patch.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
    }
}
