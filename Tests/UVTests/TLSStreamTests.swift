import Foundation
import OutaTimeTestKit
import Testing
@testable import UV

/// TLSStream client ↔ TLSStream server on one real loop over loopback, with
/// certificates from a throwaway CA (the `openssl` command). Each test ends
/// with `Loop.close()`: no handle left open.
@Suite struct TLSStreamTests {
    /// A TLS echo server on `loop`: every decrypted byte goes back.
    final class EchoServer {
        let listener: TCPListener
        let gate: TLSHandshakeGate
        var streams: [TLSStream] = []
        var failures: [TLSError] = []
        var subjects: [String?] = []
        let port: Int

        init(loop: Loop, context: TLSContext, perIteration: Int = 64) throws {
            listener = TCPListener(loop: loop)
            gate = TLSHandshakeGate(loop: loop, perIteration: perIteration)
            try listener.bind(SocketAddress(host: "127.0.0.1", port: 0))
            port = listener.localAddress!.port
            try listener.listen { [unowned self] _ in
                guard let tcp = try? self.listener.accept(),
                      let stream = try? TLSStream(accepting: tcp, context: context, gate: self.gate) else { return }
                self.streams.append(stream)
                stream.onHandshakeComplete = { [unowned self, unowned stream] in
                    self.subjects.append(stream.peerCertificateSubject)
                }
                try? stream.startReading(onData: { [unowned stream] bytes in
                    stream.enqueue(OwnedBytes(bytes))
                    stream.flush()
                }, onEnd: { [unowned self, unowned stream] _ in
                    if let failure = stream.failure { self.failures.append(failure) }
                    stream.close()
                })
            }
        }

        func close() {
            listener.close()
            gate.close()
            for stream in streams where !stream.isClosing { stream.close() }
        }
    }

    /// Connects a TLS client to `port`, sends `message` (as many chunks) and
    /// collects the echo until `message.count` bytes or the end.
    final class EchoClient {
        let tcp: TCPStream
        var stream: TLSStream?
        var received: [UInt8] = []
        var failure: TLSError?
        var ended = false
        var version: String?

        init(loop: Loop, port: Int, context: TLSContext, host: String, message: [UInt8], chunk: Int,
             done: @escaping () -> Void) throws {
            tcp = TCPStream(loop: loop)
            let tcp = self.tcp
            tcp.connect(to: try SocketAddress(host: "127.0.0.1", port: port)) { [self] error in
                #expect(error == nil)
                guard let stream = try? TLSStream(connecting: tcp, context: context, host: host) else {
                    Issue.record("cannot make the client stream")
                    return
                }
                self.stream = stream
                var offset = 0
                while offset < message.count {  // queued before the handshake: sent after it
                    let end = min(offset + chunk, message.count)
                    stream.enqueue(OwnedBytes(message[offset..<end]))
                    offset = end
                }
                stream.flush()
                try? stream.startReading(onData: { [self] bytes in
                    received.append(contentsOf: bytes)
                    if received.count == message.count {
                        version = stream.protocolVersion
                        stream.shutdown { _ in }
                    }
                }, onEnd: { [self] _ in
                    failure = stream.failure
                    ended = true
                    stream.close()
                    done()
                })
            }
        }
    }

    @Test func echoOverTLS13WithSmallAndLargeChunks() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost", "127.0.0.1"])
        let loop = try Loop()
        let server = try EchoServer(loop: loop, context: .server(certificateFile: identity.certificateFile,
                                                                 privateKeyFile: identity.keyFile))
        let client = try TLSContext.client(caFile: pki.caFile)
        // 300 KiB: many small chunks gathered into records, and long ones.
        let message = (0..<300 * 1024).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        var finished = 0
        let small = try EchoClient(loop: loop, port: server.port, context: client, host: "localhost",
                                   message: Array(message.prefix(20_000)), chunk: 7) { finished += 1; if finished == 2 { server.close() } }
        let large = try EchoClient(loop: loop, port: server.port, context: client, host: "127.0.0.1",
                                   message: message, chunk: 40_000) { finished += 1; if finished == 2 { server.close() } }
        loop.run()
        #expect(small.received == Array(message.prefix(20_000)))
        #expect(large.received == message)
        #expect(small.failure == nil && large.failure == nil)
        #expect(large.version == "TLSv1.3")
        #expect(server.failures.isEmpty)
        try loop.close()
    }

    /// Runs one client against a server and returns both sides' failures.
    private func handshake(server serverContext: TLSContext, client clientContext: TLSContext,
                           host: String) throws -> (client: EchoClient, server: EchoServer) {
        let loop = try Loop()
        let server = try EchoServer(loop: loop, context: serverContext)
        let client = try EchoClient(loop: loop, port: server.port, context: clientContext, host: host,
                                    message: Array("hello".utf8), chunk: 5) { server.close() }
        loop.run()
        try loop.close()
        return (client, server)
    }

    @Test func wrongHostIsRefusedByTheClient() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("elsewhere.example", names: ["elsewhere.example"])
        let result = try handshake(server: .server(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile),
                                   client: .client(caFile: pki.caFile), host: "localhost")
        #expect(result.client.received.isEmpty)
        let message = try #require(result.client.failure?.message)
        #expect(message.contains("certificate verify failed: hostname mismatch"), "\(message)")
    }

    @Test func expiredCertificateIsRefusedByTheClient() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"], expired: true)
        let result = try handshake(server: .server(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile),
                                   client: .client(caFile: pki.caFile), host: "localhost")
        #expect(result.client.received.isEmpty)
        let message = try #require(result.client.failure?.message)
        #expect(message.contains("certificate has expired"), "\(message)")
    }

    @Test func unknownAuthorityIsRefusedByTheClient() throws {
        let pki = try TestPKI(), other = try TestPKI(name: "Other CA")
        let identity = try pki.issue("localhost", names: ["localhost"])
        let result = try handshake(server: .server(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile),
                                   client: .client(caFile: other.caFile), host: "localhost")
        let message = try #require(result.client.failure?.message)
        #expect(message.contains("certificate verify failed"), "\(message)")
    }

    @Test func mutualTLSNeedsAClientCertificateFromTheCA() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        let board = try pki.issue("board-1", client: true)
        let server = try TLSContext.server(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile,
                                           clientCAFile: pki.caFile)
        #expect(server.requiresClientCertificate)

        let without = try handshake(server: server, client: .client(caFile: pki.caFile), host: "localhost")
        #expect(without.client.received.isEmpty)
        #expect(without.client.failure != nil)
        let refusal = try #require(without.server.failures.first?.message)
        #expect(refusal.contains("peer did not return a certificate"), "\(refusal)")

        let with = try handshake(server: server, client: .client(caFile: pki.caFile, certificateFile: board.certificateFile,
                                                                  privateKeyFile: board.keyFile), host: "localhost")
        #expect(with.client.received == Array("hello".utf8))
        #expect(with.client.failure == nil)
        #expect(with.server.subjects == ["CN=board-1"])
    }

    @Test func handshakeGateBoundsStepsPerIterationAndFinishesAll() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        let loop = try Loop()
        let server = try EchoServer(loop: loop, context: .server(certificateFile: identity.certificateFile,
                                                                 privateKeyFile: identity.keyFile), perIteration: 1)
        let context = try TLSContext.client(caFile: pki.caFile)
        var finished = 0
        let clients = try (0..<8).map { index in
            try EchoClient(loop: loop, port: server.port, context: context, host: "localhost",
                           message: Array("client \(index)".utf8), chunk: 3) {
                finished += 1
                if finished == 8 { server.close() }
            }
        }
        loop.run()
        for (index, client) in clients.enumerated() {
            #expect(client.received == Array("client \(index)".utf8))
        }
        #expect(server.gate.deferredCount > 0, "eight handshakes against a budget of one step per iteration wait")
        try loop.close()
    }

    @Test func plaintextPeerOnTheTLSPortIsClosedCleanly() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        let loop = try Loop()
        let server = try EchoServer(loop: loop, context: .server(certificateFile: identity.certificateFile,
                                                                 privateKeyFile: identity.keyFile))
        let plain = TCPStream(loop: loop)
        var ended: UVError?
        var received = 0
        plain.connect(to: try SocketAddress(host: "127.0.0.1", port: server.port)) { _ in
            // A length-prefixed hello, as a plaintext client sends it.
            let body = Array(#"{"type":"hello","id":1,"protocol":1}"#.utf8)
            plain.enqueue(OwnedBytes([0, 0, 0, UInt8(body.count)] + body))
            plain.flush()
            try? plain.startReading(onData: { received += $0.count }, onEnd: { error in
                ended = error
                plain.close()
                server.close()
            })
        }
        loop.run()
        #expect(ended != nil, "the server closed the connection")
        let failure = try #require(server.failures.first?.message)
        #expect(failure.hasPrefix("TLS handshake failed"), "\(failure)")
        try loop.close()
    }

    @Test func contextsReportUnreadableAndMismatchedFiles() throws {
        let pki = try TestPKI()
        let one = try pki.issue("one", names: ["one"]), two = try pki.issue("two", names: ["two"])
        #expect(throws: TLSError("cannot read the certificate file /nonexistent.pem: No such file or directory")) {
            try TLSContext.server(certificateFile: "/nonexistent.pem", privateKeyFile: one.keyFile)
        }
        do {
            _ = try TLSContext.server(certificateFile: one.certificateFile, privateKeyFile: two.keyFile)
            Issue.record("a key of another certificate was accepted")
        } catch {
            #expect(error.message.contains("does not match the certificate"), "\(error.message)")
        }
        do {
            _ = try TLSContext.client(caFile: one.keyFile)
            Issue.record("a key file was accepted as CA file")
        } catch {
            #expect(error.message.contains("cannot load the CA file"), "\(error.message)")
        }
    }

    @Test func sha256MatchesKnownDigests() {
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex("abc".utf8) == SHA256.hex(Array("abc".utf8)))
    }
}
