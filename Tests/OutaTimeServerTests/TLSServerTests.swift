import OutaTimeTestKit
import OutaTimeTestSupport
import Foundation
import OutaTimeServer
import Testing

/// The server's TLS listener as the `outatime` executable and raw sockets see it.
@Suite("TLS listener")
struct TLSServerTests {
    @Test("`outatime --tls --ca` talks to the TLS port; a refused certificate exits 3 with the reason")
    func terminalClient() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        try withTestServer({ config in
            config.tlsPort = 0
            config.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile)
        }) { server in
            let port = "\(server.tlsPort)"
            let ok = try ToolRun.run("outatime", ["list", "--tls", "--ca", pki.caFile, "--host", "localhost", "--port", port,
                                                  "--timeout", "5"], timeout: 20)
            #expect(ok.status == 0, "stderr: \(ok.stderr)")
            // --ca alone implies --tls.
            let implied = try ToolRun.run("outatime", ["list", "--ca", pki.caFile, "--host", "localhost", "--port", port,
                                                       "--timeout", "5"], timeout: 20)
            #expect(implied.status == 0, "stderr: \(implied.stderr)")
            // The certificate names localhost, not 127.0.0.1.
            let wrongHost = try ToolRun.run("outatime", ["list", "--tls", "--ca", pki.caFile, "--host", "127.0.0.1",
                                                         "--port", port, "--timeout", "5"], timeout: 20)
            #expect(wrongHost.status == 3)
            #expect(wrongHost.stderr.contains("certificate verify failed: IP address mismatch"), "\(wrongHost.stderr)")
            let stranger = try TestPKI(name: "Stranger CA")
            let unknown = try ToolRun.run("outatime", ["list", "--tls", "--ca", stranger.caFile, "--host", "localhost",
                                                       "--port", port, "--timeout", "5"], timeout: 20)
            #expect(unknown.status == 3)
            #expect(unknown.stderr.contains("certificate verify failed"), "\(unknown.stderr)")
        }
    }

    @Test("a connection that never finishes its TLS handshake is closed at the hello timeout; others are unaffected")
    func handshakeSharesHelloTimeout() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        try withTestServer({ config in
            config.tlsPort = 0
            config.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile)
            config.helloTimeoutMs = 300
        }) { server in
            let silent = try TestClient(port: server.tlsPort)
            let half = try TestClient(port: server.tlsPort)
            try half.sendRaw([0x16, 0x03, 0x01, 0x00, 0x40])  // the start of a ClientHello, never finished
            #expect(silent.expectClosed(timeout: 5), "closed by the hello timeout")
            #expect(half.expectClosed(timeout: 5), "closed by the hello timeout")
            let plain = try TestClient(port: server.port)
            #expect(try plain.hello()["role"] as? String == "operate")
        }
    }

    @Test("--tls-port without a certificate, --no-plain without TLS, and unreadable files are refused at start")
    func configurationErrors() throws {
        var config = ServerConfig()
        config.tlsPort = 0
        #expect { try config.validate() } throws: { ($0 as? ConfigError)?.message == "--tls-port needs --tls-cert FILE and --tls-key FILE" }
        config = ServerConfig()
        config.plainListener = false
        #expect { try config.validate() } throws: {
            ($0 as? ConfigError)?.message == "--no-plain needs a TLS listener (--tls-port, --tls-cert, --tls-key)"
        }
        let folder = try TemporaryFolder()
        #expect {
            _ = try TestServer(databasePath: folder.path("t.sqlite")) { config in
                config.tlsPort = 0
                config.tls = TLSFiles(certificateFile: folder.path("missing.pem"), privateKeyFile: folder.path("missing.key"))
            }
        } throws: { error in
            "\(error)".contains("cannot read the certificate file \(folder.path("missing.pem"))")
        }
    }
}

/// `outatime-load --tls` against the TLS listener.
@Suite("outatime-load over TLS")
struct LoadOverTLSTests {
    @Test("fanout over TLS: every message delivered exactly once; a wrong CA is an error")
    func fanout() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        try withTestServer({ config in
            config.tlsPort = 0
            config.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile)
        }) { server in
            let run = try ToolRun.run("outatime-load", [
                "fanout", "--tls", "--ca", pki.caFile, "--host", "localhost", "--port", "\(server.tlsPort)",
                "--subscribers", "10", "--messages", "200", "--size", "64", "--duration", "10", "--stall-timeout", "10", "--json"])
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try #require(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            #expect(result["delivered"] as? Int == 10 * 200)
            #expect(result["lost"] as? Int == 0)
            #expect(result["errors"] as? Int == 0)

            let stranger = try TestPKI(name: "Stranger CA")
            let refused = try ToolRun.run("outatime-load", [
                "fanout", "--ca", stranger.caFile, "--host", "localhost", "--port", "\(server.tlsPort)",
                "--subscribers", "2", "--messages", "10", "--duration", "5", "--stall-timeout", "5"], timeout: 30)
            #expect(refused.status != 0)
            #expect((refused.stderr + refused.stdout).contains("certificate verify failed"), "\(refused.stderr)\n\(refused.stdout)")
        }
    }
}
