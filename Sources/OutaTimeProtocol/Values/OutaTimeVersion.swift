/// The one place that says which release this is. Every binary's
/// `--version` (`outatime-server`, `outatime`, `outatime-load`) and the
/// server's `hello` and `stats` `server` field come from here.
///
/// No git commit: SwiftPM has no build-time injection, and reading `.git`
/// at run time would describe the checkout, not the binary.
public enum OutaTimeVersion {
    /// The release, semantic versioning: bump it here and nowhere else.
    public static let number = "0.1.0"

    /// The wire protocol version the binaries speak (`hello`'s `protocol`).
    public static let wireProtocol = 1

    /// What `--version` prints: `0.1.0 (protocol 1)`.
    public static let versionLine = "\(number) (protocol \(wireProtocol))"

    /// The server's name and version as `hello` and `stats` report it:
    /// `outatime/0.1.0`.
    public static let serverName = "outatime/\(number)"
}
