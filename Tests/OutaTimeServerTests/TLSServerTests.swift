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

    @Test("`outatime --cert --key` (or OUTATIME_CERT, OUTATIME_KEY): mutual TLS, admitted by a certificate_subject entry")
    func terminalClientCertificate() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        let board = try pki.issue("board-1", client: true, organization: "Hill Valley")
        let tokens = try TokensFile([["certificate_subject": "CN=board-1,O=Hill Valley", "name": "Lobby board",
                                      "role": "watch", "channels": ["starport/*"]]])
        try withTestServer({ config in
            config.tlsPort = 0
            config.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile,
                                  clientCAFile: pki.caFile)
            tokens.configure(&config)
        }) { server in
            let base = ["--ca", pki.caFile, "--host", "localhost", "--port", "\(server.tlsPort)", "--timeout", "5"]
            let certificate = ["--cert", board.certificateFile, "--key", board.keyFile]
            let listed = try ToolRun.run("outatime", ["list"] + base + certificate, timeout: 20)
            #expect(listed.status == 0, "stderr: \(listed.stderr)")
            // The entry's role (watch) and channels apply: no token was sent.
            let publish = try ToolRun.run("outatime", ["publish", "starport/lobby", "hello"] + base + certificate, timeout: 20)
            #expect(publish.status == 1)
            #expect(publish.stderr.contains("forbidden"), "\(publish.stderr)")
            let outside = try ToolRun.run("outatime", ["get", "timers/kitchen"] + base + certificate, timeout: 20)
            #expect(outside.status == 1)
            #expect(outside.stderr.contains("forbidden") && outside.stderr.contains("starport/*"), "\(outside.stderr)")
            // The same from the environment.
            let fromEnvironment = try ToolRun.run("outatime", ["list"] + base,
                environment: ["OUTATIME_CERT": board.certificateFile, "OUTATIME_KEY": board.keyFile], timeout: 20)
            #expect(fromEnvironment.status == 0, "stderr: \(fromEnvironment.stderr)")
            // Without a certificate the handshake is refused; --cert alone is a usage error.
            let without = try ToolRun.run("outatime", ["list"] + base, timeout: 20)
            #expect(without.status == 3)
            #expect(without.stderr.lowercased().contains("certificate required"), "\(without.stderr)")
            let alone = try ToolRun.run("outatime", ["list", "--cert", board.certificateFile] + base, timeout: 20)
            #expect(alone.status == 64)
            #expect(alone.stderr.contains("--cert and --key (OUTATIME_CERT, OUTATIME_KEY) go together"), "\(alone.stderr)")
        }
        withExtendedLifetime(tokens) {}
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

    @Test("fanout with a client certificate (--cert, --key) against a server that requires one")
    func fanoutWithClientCertificate() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        let load = try pki.issue("load-1", client: true)
        try withTestServer({ config in
            config.tlsPort = 0
            config.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile,
                                  clientCAFile: pki.caFile)
        }) { server in
            let arguments = ["fanout", "--ca", pki.caFile, "--host", "localhost", "--port", "\(server.tlsPort)",
                             "--subscribers", "4", "--messages", "50", "--size", "64", "--duration", "10",
                             "--stall-timeout", "10", "--json"]
            let run = try ToolRun.run("outatime-load", arguments + ["--cert", load.certificateFile, "--key", load.keyFile])
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try #require(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            #expect(result["delivered"] as? Int == 4 * 50)
            let alone = try ToolRun.run("outatime-load", arguments + ["--cert", load.certificateFile], timeout: 30)
            #expect(alone.status == 64)
            #expect(alone.stderr.contains("--cert and --key go together"), "\(alone.stderr)")
        }
    }
}
