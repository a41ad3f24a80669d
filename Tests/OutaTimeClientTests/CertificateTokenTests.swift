import OutaTimeTestKit
import OutaTimeTestSupport
import Foundation
import OutaTimeClient
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// Tokens-file entries that admit a client by the subject of its verified
/// certificate (`certificate_subject`, mutual TLS), end to end: the real
/// server's mTLS listener, the Swift client presenting certificates from a
/// throwaway CA, and reloads of the tokens file.
@Suite("certificate subjects in the tokens file", .timeLimit(.minutes(2)))
struct CertificateTokenTests {
    static let boardSubject = "CN=board-1,O=Hill Valley"
    static var board: [String: Any] {
        ["certificate_subject": boardSubject, "name": "Lobby board", "role": "watch", "channels": ["starport/*"]]
    }
    /// Strong enough to be given in the clear (the file refuses weak tokens).
    static let docToken = "doc-1955-Qm7vX2kR9tL4wZ8p"
    static var doc: [String: Any] { ["token": Self.docToken, "name": "Doc Brown", "role": "operate"] }

    /// A server with a plaintext listener and an mTLS listener (client
    /// certificates from `pki`), reading `tokens`.
    static func server(_ pki: TestPKI, _ tokens: TokensFile, _ body: (TestServer) throws -> Void) throws {
        let identity = try pki.issue("localhost", names: ["localhost"])
        try withTestServer({ config in
            config.tlsPort = 0
            config.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile,
                                  clientCAFile: pki.caFile)
            config.tokensFile = tokens.path
        }, body)
    }

    static func connect(_ server: TestServer, _ pki: TestPKI, _ identity: TestPKI.Identity?,
                        token: String? = nil) throws(ClientError) -> BlockingClient {
        let tls = TLSOptions(caFile: pki.caFile, certificateFile: identity?.certificateFile, privateKeyFile: identity?.keyFile)
        return try BlockingClient(options: ClientOptions(host: "localhost", port: server.tlsPort, name: "ignored",
                                                         token: token, reconnect: false, tls: tls), timeoutMs: 5_000)
    }

    /// The refused `hello`'s error, or nil when the connection was made.
    static func helloRefusal(_ body: () throws -> Void) -> ServerError? {
        do {
            try body()
            return nil
        } catch let error as ClientError {
            guard case .closed(.helloRefused(let refusal)?) = error else { return nil }
            return refusal
        } catch {
            return nil
        }
    }

    static func serverError(_ body: () throws -> Void) -> ServerError? {
        do {
            try body()
            return nil
        } catch let error as ClientError {
            guard case .server(let refusal) = error else { return nil }
            return refusal
        } catch {
            return nil
        }
    }

    @Test("a verified certificate's subject gives its entry's name, role and channels at hello, without a token")
    func certificateAdmits() throws {
        let pki = try TestPKI()
        let tokens = try TokensFile([Self.board, Self.doc])
        let boardIdentity = try pki.issue("board-1", client: true, organization: "Hill Valley")
        let stranger = try pki.issue("board-2", client: true, organization: "Hill Valley")
        try Self.server(pki, tokens) { server in
            let board = try Self.connect(server, pki, boardIdentity)
            #expect(board.hello?.role == "watch")
            _ = try board.send(.get("starport/lobby"))
            let outside = try #require(Self.serverError { _ = try board.send(.get("timers/kitchen")) })
            #expect(outside.code == "forbidden", "\(outside)")
            let write = try #require(Self.serverError {
                _ = try board.request("publish", fields: ["channel": .string("starport/lobby"), "data": .int(1)])
            })
            #expect(write.code == "forbidden", "a watch entry may not publish: \(write)")

            // A token decides alone, even beside a listed certificate.
            let doc = try Self.connect(server, pki, boardIdentity, token: Self.docToken)
            #expect(doc.hello?.role == "operate")
            // Others see the entry's name, not the one the client asked for.
            _ = try board.request("subscribe", fields: ["channel": .string("starport/lobby")])
            let reply = try doc.request("subscribe", fields: ["channel": .string("starport/lobby")])
            guard case .array(let watchers)? = reply.object?["watchers"] else {
                Issue.record("no watchers in \(reply)")
                return
            }
            let names = watchers.compactMap { if case .string(let name)? = $0.object?["name"] { name } else { nil } }
            #expect(names.sorted() == ["Doc Brown", "Lobby board"], "\(reply)")

            // A subject nobody listed, and a wrong token beside a listed certificate.
            let unknown = try #require(Self.helloRefusal { _ = try Self.connect(server, pki, stranger) })
            #expect(unknown.code == "unauthorized")
            #expect(unknown.message.contains("no entry maps the client certificate's subject 'CN=board-2,O=Hill Valley'"),
                    "\(unknown.message)")
            let wrong = try #require(Self.helloRefusal { _ = try Self.connect(server, pki, boardIdentity, token: "biff-1955") })
            #expect(wrong.code == "unauthorized")
            #expect(wrong.message.contains("the token is not valid"), "\(wrong.message)")
            #expect(!wrong.message.contains("biff"), "the token is never echoed: \(wrong.message)")

            // Plaintext has no certificate: the entry never matches there.
            let plain = try #require(Self.helloRefusal {
                _ = try BlockingClient(options: ClientOptions(port: server.port, name: "Lobby board", reconnect: false),
                                       timeoutMs: 5_000)
            })
            #expect(plain.code == "unauthorized")
            #expect(plain.message.hasSuffix("and no token was given"), "\(plain.message)")
            board.close()
            doc.close()
        }
        withExtendedLifetime(tokens) {}
    }

    @Test("reload: a changed entry applies to the certificate's connection; a removed one ends it with bye unauthorized")
    func reload() throws {
        let pki = try TestPKI()
        let tokens = try TokensFile([Self.board, Self.doc])
        let boardIdentity = try pki.issue("board-1", client: true, organization: "Hill Valley")
        try Self.server(pki, tokens) { server in
            let board = try Self.connect(server, pki, boardIdentity)
            _ = try board.request("subscribe", fields: ["channel": .string("starport/lobby")])

            // The same subject, now operate: the connection stays and may publish.
            var promoted = Self.board
            promoted["role"] = "operate"
            try tokens.write([promoted, Self.doc])
            #expect(server.handle.reload()?.tokens == .reloaded(entries: 2, closed: 0, updated: 1))
            #expect(try board.request("publish", fields: ["channel": .string("starport/lobby"), "data": .int(1)])
                .object?["delivered"] == .int(1))

            // The subject removed: error unauthorized, then bye unauthorized.
            try tokens.write([Self.doc])
            #expect(server.handle.reload()?.tokens == .reloaded(entries: 1, closed: 1, updated: 0))
            #expect(board.run { if case .closed = board.connection.state { true } else { false } })
            #expect(board.connection.lastDisconnect == .bye(.unauthorized), "\(String(describing: board.connection.lastDisconnect))")
            let refused = try #require(Self.helloRefusal { _ = try Self.connect(server, pki, boardIdentity) })
            #expect(refused.code == "unauthorized")

            // Listed again: admitted again.
            try tokens.write([Self.doc, Self.board])
            #expect(server.handle.reload()?.tokens == .reloaded(entries: 2, closed: 0, updated: 0))
            #expect(try Self.connect(server, pki, boardIdentity).hello?.role == "watch")
        }
        withExtendedLifetime(tokens) {}
    }

    @Test("certificate entries need --tls-client-ca, at start and at a reload")
    func needsClientCA() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        let tokens = try TokensFile([Self.doc, Self.board])
        var config = ServerConfig()
        config.tlsPort = 0
        config.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile)
        config.tokens = [AccessToken(token: Self.docToken, name: "Doc Brown", role: .operate),
                         AccessToken(certificateSubject: Self.boardSubject, name: "Lobby board", role: .watch)]
        #expect { try config.validate() } throws: { error in
            let message = (error as? ConfigError)?.message ?? ""
            return message.contains("entry 2 of 2 ('Lobby board') maps a certificate subject, but the server checks "
                + "no client certificates: add --tls-client-ca FILE")
        }
        // A reload that brings one in without --tls-client-ca keeps the old tokens.
        try tokens.write([Self.doc])
        try withTestServer({ config in
            config.tlsPort = 0
            config.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile)
            config.tokensFile = tokens.path
        }) { server in
            try tokens.write([Self.doc, Self.board])
            let report = try #require(server.handle.reload())
            guard case .failed(let message) = report.tokens else {
                Issue.record("reload took the file: \(report)")
                return
            }
            #expect(message.contains("maps a certificate subject"), "\(message)")
            let doc = try BlockingClient(options: ClientOptions(port: server.port, token: Self.docToken, reconnect: false))
            #expect(doc.hello?.role == "operate")
        }
    }

    @Test("the loader: exactly one of token, sha256, certificate_subject; a subject once; a clear problem otherwise",
          arguments: [
              (#"[{"token": "doc-1955", "certificate_subject": "CN=a", "name": "B", "role": "watch"}]"#,
               "has 'token' and 'certificate_subject'; give exactly one of them"),
              (#"[{"certificate_subject": "", "name": "B", "role": "watch"}]"#, "'certificate_subject' is empty"),
              (#"[{"certificate_subject": "subject=CN=board-1", "name": "B", "role": "watch"}]"#,
               "starts with 'subject=': leave that out"),
              (#"[{"certificate_subject": "board-1", "name": "B", "role": "watch"}]"#,
               "'certificate_subject' 'board-1' is not a distinguished name"),
              (#"[{"certificate_subject": ["CN=a"], "name": "B", "role": "watch"}]"#,
               "'certificate_subject' is an array, not a string"),
              (#"[{"certificate_subject": "CN=a", "name": "A", "role": "watch"}, {"certificate_subject": "CN=a", "name": "B", "role": "admin"}]"#,
               "entry 2 of 2 ('B'): repeats the certificate subject of an earlier entry"),
          ])
    func loaderRefuses(text: String, expected: String) throws {
        let folder = try TemporaryFolder()
        let path = folder.path("tokens.json")
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        do {
            _ = try TokenTable.load(from: path)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.message.contains(expected), "\(error.message)")
            #expect(!error.message.contains("doc-1955"), "a token leaked into the message: \(error.message)")
        }
    }
}
