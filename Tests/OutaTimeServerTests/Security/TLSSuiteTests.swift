import Foundation
import OutaTimeServer
import OutaTimeTestKit
import OutaTimeTestSupport
import Testing

/// The TLS 1.2 suites the listener accepts, as an independent peer
/// (Python's `ssl` module, OpenSSL underneath) sees them: ECDHE with an AEAD
/// cipher only, in the server's order.
@Suite("TLS 1.2 suites")
struct TLSSuiteTests {
    /// Handshakes with TLS 1.2 only, offering each argument as the client's
    /// whole cipher list; prints one JSON object: list → cipher chosen
    /// (`… with a session ticket` if the server sent one), or `refused: REASON`.
    static let probe = """
        import json, socket, ssl, sys
        port, out = int(sys.argv[1]), {}
        for suites in sys.argv[2:]:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
            ctx.set_ciphers(suites + ":@SECLEVEL=0")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
                    with ctx.wrap_socket(raw) as tls:
                        ticket = tls.session is not None and tls.session.has_ticket
                        out[suites] = tls.cipher()[0] + (" with a session ticket" if ticket else "")
            except (ssl.SSLError, OSError) as error:
                out[suites] = "refused: " + str(error)
        print(json.dumps(out))
        """

    static func handshakes(port: Int, _ suites: [String]) throws -> [String: String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", probe, "\(port)"] + suites
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return try JSONSerialization.jsonObject(with: data) as? [String: String] ?? [:]
    }

    @Test("TLS 1.2: static-RSA and CBC suites refused, ECDHE-AEAD accepted in the server's order, no session ticket (RSA and EC certificates)",
          arguments: [true, false])
    func suites(rsa: Bool) throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost", "127.0.0.1"], rsa: rsa)
        try withTestServer({ config in
            config.tlsPort = 0
            config.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile)
        }) { server in
            let refusedSuites = rsa
                ? ["AES128-SHA", "AES256-SHA", "AES128-GCM-SHA256", "AES256-SHA256", "ECDHE-RSA-AES128-SHA",
                   "ECDHE-RSA-AES256-SHA384", "DHE-RSA-AES128-GCM-SHA256"]
                : ["ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA", "ECDHE-ECDSA-AES128-SHA256"]
            let kind = rsa ? "RSA" : "ECDSA"
            let accepted = ["ECDHE-\(kind)-AES128-GCM-SHA256", "ECDHE-\(kind)-AES256-GCM-SHA384",
                            "ECDHE-\(kind)-CHACHA20-POLY1305"]
            // The client prefers ChaCha20; the server's order puts AES-128-GCM first.
            let preference = "ECDHE-\(kind)-CHACHA20-POLY1305:ECDHE-\(kind)-AES128-GCM-SHA256"
            let results = try Self.handshakes(port: server.tlsPort, refusedSuites + accepted + [preference])
            for suite in refusedSuites {
                #expect(results[suite]?.hasPrefix("refused") == true, "\(suite): \(results[suite] ?? "no result")")
            }
            for suite in accepted {
                // No ticket either: nothing resumes.
                #expect(results[suite] == suite, "\(suite): \(results[suite] ?? "no result")")
            }
            #expect(results[preference] == "ECDHE-\(kind)-AES128-GCM-SHA256", "\(results[preference] ?? "no result")")
        }
    }
}
