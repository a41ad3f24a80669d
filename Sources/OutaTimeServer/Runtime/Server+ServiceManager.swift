import Foundation
import Logging
import UV

/// systemd `Type=notify` (dist/systemd/outatime-server.service.in): the
/// executable tells the service manager `READY=1` once its listeners are
/// bound and the store is open, `RELOADING=1`/`READY=1` around a SIGHUP
/// reload and `STOPPING=1` when SIGINT or SIGTERM starts the drain. Only
/// the foreground runner (the executable) notifies; ``ServerHandle`` never.
extension Server {
    /// The notifier for `$NOTIFY_SOCKET`, or nil when there is none. An
    /// address that cannot be used is logged and ignored: the server runs
    /// (systemd then reports a start timeout, which names the cause).
    static func openServiceNotifier(logger: Logger,
                                    environment: [String: String] = ProcessInfo.processInfo.environment) -> ServiceNotifier? {
        do {
            return try ServiceNotifier.fromEnvironment(environment)
        } catch {
            logger.warning("service manager notifications off", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Sends one notification, if running under a service manager; a
    /// failure is logged (never fatal: the server's clients come first).
    func notifyService(_ send: (ServiceNotifier) throws -> Void) {
        guard let serviceNotifier else { return }
        do {
            try send(serviceNotifier)
        } catch {
            logger.warning("service manager notification failed", metadata: ["error": "\(error)"])
        }
    }
}

extension Server.Listening {
    /// `STATUS=` for `systemctl status`: the bound listeners.
    var serviceStatus: String {
        var parts: [String] = []
        if let plain { parts.append("listening on \(plain)") }
        if let tls { parts.append("tls on \(tls)") }
        if let http { parts.append("http on \(http)") }
        return parts.joined(separator: ", ")
    }
}

extension ReloadReport {
    /// `STATUS=` after a reload: what each step did.
    var serviceStatus: String { "reloaded: \(description)" }
}
