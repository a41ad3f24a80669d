import Foundation
import OutaTimeProtocol
import OutaTimeServer
import OutaTimeTestKit
import OutaTimeTestSupport
import Testing

/// `--proxy-from` behind a real haproxy 2.6 (`send-proxy-v2` and
/// `send-proxy`, TCP mode; TLS passes through it): the server sees each
/// client's own address.
@Suite("behind haproxy", .timeLimit(.minutes(3)),
       .enabled(if: FileManager.default.isExecutableFile(atPath: HAProxy.executable), "haproxy is not installed"))
struct HAProxyTests {
    @Test("send-proxy-v2 and send-proxy, plaintext and TLS: per-address limits and logs use the client's address")
    func clientAddresses() throws {
        let logs = CapturedLogs()
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        let folder = try TemporaryFolder()
        let server = try TestServer(databasePath: folder.path("outatime.sqlite"), logger: logs.logger(level: .debug)) {
            $0.proxyFrom = [try! AddressRange("127.0.0.1/32")]
            $0.maxConnectionsPerAddress = 1
            $0.tlsPort = 0
            $0.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile)
        }
        defer { server.stop() }
        let haproxy = try HAProxy([.init(serverPort: server.port, sendProxy: "send-proxy-v2"),
                                   .init(serverPort: server.port, sendProxy: "send-proxy"),
                                   .init(serverPort: server.tlsPort, sendProxy: "send-proxy-v2")])
        let (v2Port, v1Port, tlsPort) = (haproxy.ports[0], haproxy.ports[1], haproxy.ports[2])

        // Two clients, one per frontend: without the header both would be
        // haproxy's 127.0.0.1 and the second would be refused (limit 1).
        let five = try TestClient(port: v2Port, source: "127.0.0.5")
        try five.hello()
        let six = try TestClient(port: v1Port, source: "127.0.0.6")
        try six.hello()
        // A second connection of 127.0.0.5 (through either frontend) is refused for 127.0.0.5.
        let again = try TestClient(port: v1Port, source: "127.0.0.5")
        let busy = try again.readFrame()
        #expect(busy.errorCode == .serverBusy, "got \(describe([busy]))")
        #expect((busy.errorMessage ?? "").contains("address 127.0.0.5 holds its maximum of 1"), "\(busy)")
        // TLS through haproxy, from a third address.
        let tls = try PythonTLSHello.run(port: tlsPort, caFile: pki.caFile, header: [], source: "127.0.0.7")
        #expect(tls.status == 0, "stderr: \(tls.errors)")
        #expect(tls.output.contains("\"ok\":true"), "stdout: \(tls.output)")
        #expect(try five.request("ping").isOK && six.request("ping").isOK)
        for peer in ["127.0.0.5", "127.0.0.6", "127.0.0.7"] {
            #expect(logs.all.contains { $0.contains("debug hello ") && $0.contains("peer=\(peer)") },
                    "no hello logged for \(peer): \(logs.all.suffix(10)); haproxy: \(haproxy.log)")
        }
        #expect(!logs.all.contains { $0.contains("PROXY header") }, "\(logs.all.filter { $0.contains("PROXY") })")
    }
}

/// `outatime-server --proxy-from` on the command line.
@Suite("--proxy-from flag")
struct ProxyFromFlagTests {
    @Test("a bad value exits 64 naming the flag and the value; good ones start the server", arguments: [
        ("10.0.0.0/33", "--proxy-from '10.0.0.0/33': the prefix length must be 0…32"),
        ("balancer.example", "--proxy-from 'balancer.example' is not an address or network in CIDR notation"),
    ])
    func badValue(value: String, message: String) throws {
        let server = try ServerProcess(["--port", "0", "--proxy-from", "127.0.0.1", "--proxy-from", value])
        #expect(server.waitForExit() == 64)
        #expect(server.stderrText.contains(message), "stderr: \(server.stderrText)")
    }

    @Test("IPv4 and IPv6 networks, repeated, are accepted")
    func goodValues() throws {
        let server = try ServerProcess(["--port", "0", "--proxy-from", "10.0.0.0/8", "--proxy-from", "2001:db8::/32",
                                        "--log-level", "error"])
        #expect(server.awaitListening() != nil, "stderr: \(server.stderrText)")
    }
}
