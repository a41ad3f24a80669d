import OutaTimeTestKit
import OutaTimeTestSupport
import Foundation
import OutaTimeClient
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// The Swift client over TLS against the real server's TLS listener, and
/// the server's TLS context replaced at run time.
@Suite("TLS client and server")
struct TLSClientTests {
    static func tlsServer(_ pki: TestPKI, _ identity: TestPKI.Identity, clientCA: String? = nil,
                          _ body: (TestServer) throws -> Void) throws {
        try withTestServer({ config in
            config.tlsPort = 0
            config.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile,
                                  clientCAFile: clientCA)
        }, body)
    }

    static func connect(_ server: TestServer, host: String = "localhost", tls: TLSOptions) throws(ClientError) -> BlockingClient {
        try BlockingClient(options: ClientOptions(host: host, port: server.tlsPort, name: "tls", reconnect: false, tls: tls),
                           timeoutMs: 5_000)
    }

    /// The `tlsFailed` message of a refused connection, or nil.
    static func refusal(_ body: () throws -> Void) -> (message: String, retryable: Bool)? {
        do {
            try body()
            return nil
        } catch let error as ClientError {
            guard case .closed(let reason?) = error, case .tlsFailed(let message) = reason else { return nil }
            return (message, reason.isRetryable)
        } catch {
            return nil
        }
    }

    @Test("requests over TLS; refused certificates say why and are not retried")
    func requestsAndRefusals() throws {
        let pki = try TestPKI()
        try Self.tlsServer(pki, try pki.issue("localhost", names: ["localhost", "127.0.0.1"])) { server in
            for host in ["localhost", "127.0.0.1"] {
                let client = try Self.connect(server, host: host, tls: TLSOptions(caFile: pki.caFile))
                #expect(client.hello?.role == "operate")
                _ = try client.send(.command("timers/kitchen", action: "add",
                                             args: ["event": .string("Tea"), "remaining_s": .int(60)]))
                #expect(try client.send(.list(kind: .timers)).channels.map(\.channel) == ["timers/kitchen"])
                client.close()
            }
            let stranger = try TestPKI(name: "Stranger CA")
            let unknown = try #require(Self.refusal { _ = try Self.connect(server, tls: TLSOptions(caFile: stranger.caFile)) })
            #expect(unknown.message.contains("certificate verify failed"), "\(unknown.message)")
            #expect(!unknown.retryable)
            let missing = try #require(Self.refusal { _ = try Self.connect(server, tls: TLSOptions(caFile: "/nonexistent/ca.pem")) })
            #expect(missing.message == "cannot read the CA file /nonexistent/ca.pem: No such file or directory")
        }
        try Self.tlsServer(pki, try pki.issue("elsewhere.example", names: ["elsewhere.example"])) { server in
            let wrong = try #require(Self.refusal { _ = try Self.connect(server, tls: TLSOptions(caFile: pki.caFile)) })
            #expect(wrong.message.contains("certificate verify failed: hostname mismatch"), "\(wrong.message)")
            #expect(wrong.message.contains("localhost:\(server.tlsPort)"), "names the server: \(wrong.message)")
        }
        try Self.tlsServer(pki, try pki.issue("localhost", names: ["localhost"], expired: true)) { server in
            let expired = try #require(Self.refusal { _ = try Self.connect(server, tls: TLSOptions(caFile: pki.caFile)) })
            #expect(expired.message.contains("certificate verify failed: certificate has expired"), "\(expired.message)")
        }
    }

    @Test("mutual TLS: a client certificate from the CA is needed")
    func mutualTLS() throws {
        let pki = try TestPKI()
        let board = try pki.issue("board-1", client: true)
        try Self.tlsServer(pki, try pki.issue("localhost", names: ["localhost"]), clientCA: pki.caFile) { server in
            let refused = try #require(Self.refusal { _ = try Self.connect(server, tls: TLSOptions(caFile: pki.caFile)) })
            #expect(refused.message.lowercased().contains("certificate required"), "\(refused.message)")
            let client = try Self.connect(server, tls: TLSOptions(caFile: pki.caFile, certificateFile: board.certificateFile,
                                                                  privateKeyFile: board.keyFile))
            #expect(client.hello?.role == "operate")
            client.close()
        }
    }

    @Test("reloadTLS: new connections get the new certificate, established ones stay, bad files keep the old one")
    func reload() throws {
        let first = try TestPKI(name: "First CA"), second = try TestPKI(name: "Second CA")
        let old = try first.issue("localhost", names: ["localhost"])
        let new = try second.issue("localhost", names: ["localhost"])
        try Self.tlsServer(first, old) { server in
            let established = try Self.connect(server, tls: TLSOptions(caFile: first.caFile))

            #expect {
                try server.handle.reloadTLS(TLSFiles(certificateFile: "/nonexistent.pem", privateKeyFile: new.keyFile))
            } throws: {
                ($0 as? ConfigError)?.message == "cannot read the certificate file /nonexistent.pem: No such file or directory"
            }
            do {
                try server.handle.reloadTLS(TLSFiles(certificateFile: new.certificateFile, privateKeyFile: old.keyFile))
                Issue.record("a key of another certificate was accepted")
            } catch {
                #expect("\(error)".contains("does not match"), "\(error)")
            }
            let stillOld = try Self.connect(server, tls: TLSOptions(caFile: first.caFile))
            stillOld.close()

            try server.handle.reloadTLS(TLSFiles(certificateFile: new.certificateFile, privateKeyFile: new.keyFile))
            let refused = try #require(Self.refusal { _ = try Self.connect(server, tls: TLSOptions(caFile: first.caFile)) })
            #expect(refused.message.contains("certificate verify failed"), "\(refused.message)")
            let fresh = try Self.connect(server, tls: TLSOptions(caFile: second.caFile))
            #expect(fresh.hello?.role == "operate")
            fresh.close()
            // The connection made before the reload goes on with its session.
            _ = try established.send(.list(kind: .timers))
            established.close()

            // Reloading the same paths again (what SIGHUP will do) works too.
            try server.handle.reloadTLS()
        }
    }

    @Test("reload (SIGHUP): the TLS files are read again from their paths; a broken file keeps the certificate in force")
    func reloadReadsTheSamePaths() throws {
        let first = try TestPKI(name: "First CA"), second = try TestPKI(name: "Second CA")
        let old = try first.issue("localhost", names: ["localhost"])
        let new = try second.issue("localhost", names: ["localhost"])
        // The server's files, replaced in place as an operator would.
        let certificate = first.directory.appendingPathComponent("live.pem").path
        let key = first.directory.appendingPathComponent("live.key").path
        func install(_ identity: TestPKI.Identity) throws {
            try Data(contentsOf: URL(fileURLWithPath: identity.certificateFile)).write(to: URL(fileURLWithPath: certificate))
            try Data(contentsOf: URL(fileURLWithPath: identity.keyFile)).write(to: URL(fileURLWithPath: key))
        }
        try install(old)
        try Self.tlsServer(first, TestPKI.Identity(certificateFile: certificate, keyFile: key)) { server in
            #expect(server.handle.reload()?.tls == .reloaded)
            try Self.connect(server, tls: TLSOptions(caFile: first.caFile)).close()

            try install(new)
            #expect(server.handle.reload()?.tls == .reloaded)
            #expect(Self.refusal { _ = try Self.connect(server, tls: TLSOptions(caFile: first.caFile)) } != nil)
            try Self.connect(server, tls: TLSOptions(caFile: second.caFile)).close()

            try "not a certificate".write(toFile: certificate, atomically: true, encoding: .utf8)
            guard case .failed(let message)? = server.handle.reload()?.tls else {
                Issue.record("a broken certificate file was not reported")
                return
            }
            #expect(message.contains(certificate), "\(message)")
            let stillNew = try Self.connect(server, tls: TLSOptions(caFile: second.caFile))
            #expect(stillNew.hello?.role == "operate")
            stillNew.close()
        }
    }
}
