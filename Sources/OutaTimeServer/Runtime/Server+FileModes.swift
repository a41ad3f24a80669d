import Logging
import UV

extension Server {
    /// Logs a warning for each secret file (the tokens file, the TLS key)
    /// that others may read, or that its group may read when that group is
    /// not the server's own (`root:outatime 0640` is how the systemd unit
    /// lets the `outatime` user read a file it does not own). At start and
    /// at each reload (`step` says which). Only warns: a service manager may
    /// hand the file over in ways this cannot see.
    func warnAboutExposedSecretFiles(_ step: String) {
        var files: [(what: String, path: String)] = []
        if let path = config.tokensFile { files.append(("tokens file", path)) }
        if let tls = tlsFiles { files.append(("TLS key file", tls.privateKeyFile)) }
        for (what, path) in files {
            if let problem = Self.exposure(of: path, what: what) {
                logger.warning("\(step): \(problem)", metadata: ["file": "\(path)"])
            }
        }
    }

    /// Why `path` is exposed, or nil when only its owner (and the server's
    /// own group) may read it.
    static func exposure(of path: String, what: String) -> String? {
        guard let access = ProcessHardening.access(of: path) else { return nil }
        let loose = access.mode & (access.groupIsOurs ? 0o007 : 0o077)
        guard loose != 0 else { return nil }
        let mode = "0" + String(access.mode, radix: 8)
        let who = loose & 0o070 != 0 && loose & 0o007 != 0 ? "its group and others"
            : loose & 0o070 != 0 ? "its group" : "others"
        return "the \(what) \(path) is mode \(mode): \(who) may read it; make it 0600 "
            + "(chmod go= FILE), or 0640 with the server's group (root:outatime)"
    }
}
