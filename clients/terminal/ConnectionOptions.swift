import ArgumentParser
import Foundation
import OutaTimeClient
import OutaTimeProtocol

/// Flags every command shares: where the server is, who we are, how to print.
struct ConnectionOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Server host name or address (env OUTATIME_HOST).", valueName: "host"))
    var host: String = ProcessInfo.processInfo.environment["OUTATIME_HOST"] ?? "127.0.0.1"

    @Option(help: ArgumentHelp("Server port (env OUTATIME_PORT).", valueName: "port"))
    var port: Int = Int(ProcessInfo.processInfo.environment["OUTATIME_PORT"] ?? "") ?? 1985

    @Flag(help: """
        Speak TLS (to the server's --tls-port); the certificate must be valid for --host \
        (env OUTATIME_TLS=1).
        """)
    var tls = false

    @Option(help: ArgumentHelp("""
        PEM file of the CA that signed the server's certificate; implies --tls. Without it the \
        system's trusted CAs are used (env OUTATIME_CA).
        """, valueName: "file"))
    var ca: String?

    @Option(help: ArgumentHelp("""
        PEM file of your client certificate, for a server started with --tls-client-ca (mutual TLS); \
        implies --tls and needs --key. With a tokens-file entry for its subject, no --token is needed \
        (env OUTATIME_CERT).
        """, valueName: "file"))
    var cert: String?

    @Option(help: ArgumentHelp("PEM file of the private key of --cert (env OUTATIME_KEY).", valueName: "file"))
    var key: String?

    @Option(help: ArgumentHelp("Access token when the server uses --tokens (env OUTATIME_TOKEN).", valueName: "token"))
    var token: String?

    @Option(help: ArgumentHelp("Your display name, shown to other watchers (env OUTATIME_NAME).", valueName: "name"))
    var name: String?

    @Option(help: ArgumentHelp("""
        Liveness: after this long without anything from the server, a ping checks the link (0: no \
        checks; the link is then taken for lost only after 2 × the server's heartbeat, 30 s).
        """, valueName: "ms"))
    var probeAfterMs: UInt64 = 1_000

    @Option(help: ArgumentHelp("""
        The least time a liveness ping waits for any answer before the link counts as lost and the \
        client reconnects; more when the measured round trip asks for it (RTT + 4 × its variance). \
        Satellite or lossy links: 5000.
        """, valueName: "ms"))
    var probeTimeoutMs: UInt64 = 2_000

    @Flag(help: "Print JSON instead of readable text: the server's result; watch and top print one object a line.")
    var json = false

    @Option(help: ArgumentHelp("""
        Give up after this many seconds without a reply. A state-changing command is sent again \
        (with its idempotency key) on a new connection if the link fails, until this time is up.
        """, valueName: "seconds"))
    var timeout: Double = 10

    var clientOptions: ClientOptions {
        let environment = ProcessInfo.processInfo.environment
        var options = ClientOptions(host: host, port: port,
                             name: name ?? environment["OUTATIME_NAME"] ?? environment["USER"],
                             client: "outatime-cli/0.1",
                             token: token ?? environment["OUTATIME_TOKEN"], reconnect: false,
                             tls: tlsOptions)
        options.connectTimeoutMs = UInt64(max(0.1, timeout) * 1000)  // --timeout bounds connecting too
        options.probeAfterMs = probeAfterMs
        options.probeTimeoutFloorMs = probeTimeoutMs
        return options
    }

    /// TLS from `--tls`/`--ca`/`--cert`/`--key` or `OUTATIME_TLS`/`OUTATIME_CA`/
    /// `OUTATIME_CERT`/`OUTATIME_KEY` (a flag wins over its variable); nil for plain TCP.
    var tlsOptions: TLSOptions? {
        let environment = ProcessInfo.processInfo.environment
        func setting(_ flag: String?, _ variable: String) -> String? {
            flag ?? environment[variable].flatMap { $0.isEmpty ? nil : $0 }
        }
        let caFile = setting(ca, "OUTATIME_CA")
        let certificateFile = setting(cert, "OUTATIME_CERT")
        let fromEnvironment = ["1", "true", "yes", "on"].contains(environment["OUTATIME_TLS"]?.lowercased() ?? "")
        guard tls || fromEnvironment || caFile != nil || certificateFile != nil else { return nil }
        return TLSOptions(caFile: caFile, certificateFile: certificateFile, privateKeyFile: setting(key, "OUTATIME_KEY"))
    }

    mutating func validate() throws {
        let environment = ProcessInfo.processInfo.environment
        let hasCertificate = cert != nil || !(environment["OUTATIME_CERT"] ?? "").isEmpty
        let hasKey = key != nil || !(environment["OUTATIME_KEY"] ?? "").isEmpty
        guard hasCertificate == hasKey else {
            throw ValidationError("--cert and --key (OUTATIME_CERT, OUTATIME_KEY) go together: a client certificate and its private key")
        }
    }

    /// Connects, runs `body`, prints its result; maps failures to exit codes
    /// (``ExitStatus``: 1 the server refused the request or the connection,
    /// 3 cannot reach the server).
    func run(_ body: (BlockingClient) throws(ClientError) -> JSONValue, render: (JSONValue) -> String) throws {
        let client = try connect()
        defer { client.close() }
        do {
            let result = try body(client)
            Output.print(json ? Output.json(result) : render(result))
        } catch {
            throw failed(error, on: client)
        }
    }

    /// A ready client, made with `clientOptions` changed by `adjust`; when
    /// it cannot be made, prints why and throws the exit code.
    func connect(_ adjust: (inout ClientOptions) -> Void = { _ in }) throws -> BlockingClient {
        var options = clientOptions
        adjust(&options)
        do {
            return try BlockingClient(options: options, timeoutMs: UInt64(max(0.1, timeout) * 1000))
        } catch {
            let reason: DisconnectReason? = if case .closed(let reason) = error { reason } else { nil }
            let message = ExitStatus.message(reason, host: host, port: port)
            Output.fail(reason == nil ? "\(message): \(error)" : message)
            throw ExitCode(ExitStatus.after(reason))
        }
    }

    /// Prints why a request on `client` failed and returns the exit code
    /// to throw. A connection that ended under the request is named by how
    /// it ended: a `bye` for a refusal (a token withdrawn) exits 1 like any
    /// refusal, a broken stream says what broke.
    func failed(_ error: ClientError, on client: BlockingClient) -> ExitCode {
        switch error {
        case .server(let serverError):
            Output.fail("\(serverError.code): \(serverError.message)")
            return ExitCode(ExitStatus.refused)
        case .disconnected, .closed:
            let reason = client.connection.lastDisconnect
            Output.fail("\(error)" + (reason.map { " (\($0))" } ?? ""))
            return ExitCode(ExitStatus.after(reason))
        default:
            Output.fail("\(error)")
            return ExitCode(ExitStatus.unreachable)
        }
    }
}

extension BlockingClient {
    /// `command` on `channel`, returning the action's result; with an
    /// `idempotencyKey` (protocol §6.9), safe to send again.
    func command(_ channel: String, _ action: String, _ args: [String: JSONValue] = [:],
                 idempotencyKey: String? = nil) throws(ClientError) -> JSONValue {
        var fields: [String: JSONValue] = ["channel": .string(channel), "action": .string(action), "args": .object(args)]
        if let idempotencyKey { fields["idempotency_key"] = .string(idempotencyKey) }
        return try request("command", fields: fields)
    }
}
