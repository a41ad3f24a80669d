import ArgumentParser
import Foundation
import OutaTimeClient
import OutaTimeProtocol

/// `--idempotency-key` of the state-changing one-shots.
struct CommandKeyOption: ParsableArguments {
    @Option(help: ArgumentHelp("""
        The command's idempotency key (1–64 characters of A–Z a–z 0–9 . _ - :; default: a new random \
        one). The server applies a command with a given key at most once and answers a repeat with \
        the first outcome: after exit status 4 (outcome unknown), run the same command again with the \
        key it printed.
        """, valueName: "key"))
    var idempotencyKey: String?

    func validate() throws {
        guard let idempotencyKey else { return }
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-:".unicodeScalars)
        guard (1...64).contains(idempotencyKey.unicodeScalars.count),
              idempotencyKey.unicodeScalars.allSatisfy(allowed.contains)
        else {
            throw ValidationError("--idempotency-key '\(idempotencyKey)' must be 1–64 characters of A–Z a–z 0–9 . _ - : (a UUID fits)")
        }
    }

    /// The key to send: the one given, else a new random one.
    var key: String { idempotencyKey ?? UUID().uuidString.lowercased() }
}

/// A state-changing one-shot (`timers add`, `dispatch`, `laps lap`, …):
/// sent with an idempotency key (protocol §6.9), and, when the link fails
/// before the reply, sent again with the same key on a new connection until
/// `--timeout`, so that it is applied exactly once or the exit status says
/// the outcome is unknown.
///
/// Exit statuses (``ExitStatus``): 0 applied (first time or as a repeat),
/// 1 refused by the server (nothing applied), 3 unreachable before anything
/// was sent, 4 sent but no answer before `--timeout` (the key is printed).
enum RetriedCommand {
    static func run(_ channel: String, _ action: String, _ args: [String: JSONValue], key option: CommandKeyOption,
                    options: ConnectionOptions, render: (JSONValue) -> String) throws {
        let key = option.key
        let deadline = Date().addingTimeInterval(max(0.1, options.timeout))
        var client = try options.connect()  // nothing sent yet: exit 3 (or 1) as any command
        var problem = ""
        while true {
            client.timeoutMs = milliseconds(until: deadline)
            do {
                let result = try client.command(channel, action, args, idempotencyKey: key)
                client.close()
                Output.print(options.json ? Output.json(result) : render(result))
                return
            } catch {
                switch error {
                case .server(let refusal) where refusal.code == ErrorCode.serverBusy.rawValue
                    || refusal.code == ErrorCode.unavailable.rawValue:
                    // Nothing was changed now; the key makes the next try safe either way.
                    problem = "\(refusal.code): \(refusal.message)"
                case .disconnected, .closed, .timedOut:
                    problem = "\(error)" + (client.connection.lastDisconnect.map { " (\($0))" } ?? "")
                default:
                    // A refusal: nothing was applied (a repeat of an applied
                    // command is answered with its outcome, not refused).
                    client.close()
                    throw options.failed(error, on: client)
                }
            }
            client.close()
            guard let next = reconnect(options, until: deadline, problem: &problem) else {
                Output.fail("outcome unknown: the command may or may not have been applied (\(problem); "
                    + "no answer within --timeout \(formatted(options.timeout)) s). Run it again with "
                    + "--idempotency-key \(key) to apply it at most once")
                throw ExitCode(ExitStatus.outcomeUnknown)
            }
            client = next
        }
    }

    /// A new connection before `deadline`, trying every quarter second; nil when none could be made.
    private static func reconnect(_ options: ConnectionOptions, until deadline: Date,
                                  problem: inout String) -> BlockingClient? {
        while true {
            let left = milliseconds(until: deadline)
            guard left > 50 else { return nil }
            var clientOptions = options.clientOptions
            clientOptions.connectTimeoutMs = left
            do {
                return try BlockingClient(options: clientOptions, timeoutMs: left)
            } catch {
                let reason: DisconnectReason? = if case .closed(let reason) = error { reason } else { nil }
                problem = "reconnecting: " + ExitStatus.message(reason, host: options.host, port: options.port)
                Thread.sleep(forTimeInterval: min(0.25, Double(milliseconds(until: deadline)) / 1000))
            }
        }
    }

    private static func milliseconds(until deadline: Date) -> UInt64 {
        UInt64(max(1, deadline.timeIntervalSinceNow * 1000))
    }

    private static func formatted(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
