import ArgumentParser
import Foundation
import UV

/// Flags every scenario shares: where the server is, how long to run, how to print.
struct LoadOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Server address: a numeric IPv4/IPv6 address or a host name (env OUTATIME_HOST).", valueName: "host"))
    var host: String = ProcessInfo.processInfo.environment["OUTATIME_HOST"] ?? "127.0.0.1"

    @Option(help: ArgumentHelp("Server port (env OUTATIME_PORT).", valueName: "port"))
    var port: Int = Int(ProcessInfo.processInfo.environment["OUTATIME_PORT"] ?? "") ?? 1985

    @Option(help: ArgumentHelp("Stop sending after this many seconds, then wait for what is in flight.", valueName: "seconds"))
    var duration: Double = 60

    @Option(help: ArgumentHelp("Give up when no delivery arrives for this many seconds.", valueName: "seconds"))
    var stallTimeout: Double = 10

    @Option(help: ArgumentHelp("Event loops (threads) that drive the connections.", valueName: "count"))
    var loops: Int = 2

    @Flag(help: "Print the result as one JSON object instead of a table.")
    var json = false

    @Flag(help: "Connect with TLS (to the server's --tls-port); the certificate must be valid for --host.")
    var tls = false

    @Option(help: ArgumentHelp("PEM file of the CA that signed the server's certificate; implies --tls (default: the system's CAs).",
                               valueName: "file"))
    var ca: String?

    @Option(help: ArgumentHelp("""
        PEM file of a client certificate, for a server started with --tls-client-ca (mutual TLS); \
        implies --tls and needs --key.
        """, valueName: "file"))
    var cert: String?

    @Option(help: ArgumentHelp("PEM file of the private key of --cert.", valueName: "file"))
    var key: String?

    @Option(help: ArgumentHelp("""
        Access token for a server started with --tokens: every connection sends it in hello; it needs \
        role operate for the scenarios that publish or run commands (env OUTATIME_TOKEN).
        """, valueName: "token"))
    var token: String?

    @Option(help: ArgumentHelp("""
        tcp: length-prefixed frames on the server's TCP port; ws: WebSocket on its HTTP listener \
        (`outatime-server --http`): every connection upgrades --ws-path, and --port is the HTTP port.
        """, valueName: "tcp|ws"))
    var transport: LoadTransport = .tcp

    @Option(help: ArgumentHelp("The path a WebSocket connection upgrades (--transport ws).", valueName: "path"))
    var wsPath: String = "/ws"

    func validateShared() throws {
        guard wsPath.hasPrefix("/"), wsPath.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw ValidationError("--ws-path must be a path starting with '/' of visible ASCII, got '\(wsPath)'")
        }
        guard (cert == nil) == (key == nil) else {
            throw ValidationError("--cert and --key go together (a client certificate and its private key)")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535, got \(port)") }
        guard duration > 0 else { throw ValidationError("--duration must be positive, got \(duration)") }
        guard stallTimeout > 0 else { throw ValidationError("--stall-timeout must be positive, got \(stallTimeout)") }
        guard (1...64).contains(loops) else { throw ValidationError("--loops must be 1…64, got \(loops)") }
    }

    /// What every scenario does before it connects: ignore SIGPIPE, raise the
    /// open-file limit, resolve the server (exit 3 when it cannot be found).
    func prepareRun() throws -> (address: SocketAddress, fileLimit: UInt64?) {
        Signal.ignore(SIGPIPE)
        let fileLimit = OpenFileLimit.raise()
        if let token = token ?? ProcessInfo.processInfo.environment["OUTATIME_TOKEN"].flatMap({ $0.isEmpty ? nil : $0 }) {
            let text = String(decoding: (try? JSONEncoder().encode(token)) ?? Data(), as: UTF8.self)
            LoadConnection.tokenMember = #","token":"# + text
        }
        LoadConnection.transport = transport
        LoadConnection.webSocketTarget = (wsPath, host)
        if tls || ca != nil || cert != nil {
            do {
                LoadConnection.tls = (try TLSContext.client(caFile: ca, certificateFile: cert, privateKeyFile: key), host)
            } catch {
                Report.progress("outatime-load: \(error)")
                throw ExitCode(3)
            }
        }
        do {
            return (try AddressLookup.resolve(host: host, port: port), fileLimit)
        } catch {
            Report.progress("outatime-load: \(error)")
            throw ExitCode(3)
        }
    }

    /// File descriptors the harness needs besides its connections (loops, probes, stdio).
    static let fileMargin = 64

    /// Refuses up front a run whose `connections` the open-file limit cannot
    /// hold. `cause` names the flags that asked for them, `remedy` says how
    /// to ask for fewer.
    static func requireFiles(for connections: Int, limit: UInt64?, cause: String, remedy: String) throws {
        let needed = connections + fileMargin
        if let limit, limit < UInt64(needed) {
            throw ValidationError("\(cause) need an open-file limit of at least \(needed), but this process may open only \(limit) files; raise it (`ulimit -n \(needed)`) or \(remedy)")
        }
    }

    /// Connections of `total` that loop `index` of `loops` drives (spread evenly).
    static func share(of total: Int, loop index: Int, loops: Int) -> Int {
        total / loops + (index < total % loops ? 1 : 0)
    }
}

/// `--concurrency`, for the scenarios that open thousands of connections.
struct OpeningOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Connections in their opening handshake at a time, over all loops (1…10000).", valueName: "count"))
    var concurrency: Int = 200

    func validate() throws {
        guard (1...10_000).contains(concurrency) else {
            throw ValidationError("--concurrency must be 1…10000, got \(concurrency)")
        }
    }
}
