import CLibSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TLS failure: a file that cannot be loaded, a handshake the peer or we
/// refused, a broken record. The message is OpenSSL's reason, made readable
/// (for a refused certificate: `certificate verify failed: certificate has
/// expired`, `… hostname mismatch`, …).
public struct TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, for people.
    public let message: String

    /// Creates an error with `message`.
    public init(_ message: String) { self.message = message }

    public var description: String { message }

    /// `context` followed by the reasons in OpenSSL's error queue (which it empties).
    static func fromQueue(_ context: String) -> TLSError {
        let reasons = drainErrorQueue()
        return TLSError(reasons.isEmpty ? context : "\(context): \(reasons.joined(separator: "; "))")
    }

    /// Empties this thread's OpenSSL error queue, returning the reasons.
    @discardableResult
    static func drainErrorQueue() -> [String] {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if let reason = ERR_reason_error_string(code) {
                reasons.append(String(cString: reason))
            } else {
                var buffer = [CChar](repeating: 0, count: 256)
                ERR_error_string_n(code, &buffer, buffer.count)
                reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return reasons
    }
}

/// The configuration every ``TLSStream`` of one side is made from: for a
/// server, its certificate chain and key (and optionally the CA its clients'
/// certificates must chain to); for a client, the CAs it trusts. TLS 1.2 is
/// the minimum, TLS 1.3 is chosen whenever the peer has it, and TLS 1.2
/// offers only ``tls12Suites`` (forward secret and authenticated: no
/// static RSA key exchange, no CBC, no SHA-1 MAC), the server's order first.
///
/// Immutable once made, so one context may serve any number of streams on
/// any thread. To change certificates, make a new context: streams already
/// made keep theirs.
public final class TLSContext: @unchecked Sendable {
    /// The TLS 1.2 cipher suites, in the server's order of preference:
    /// ECDHE key exchange with an AEAD cipher only, Mozilla's "intermediate"
    /// profile without its DHE suites. With an RSA certificate that leaves
    /// the `ECDHE-RSA-…` ones, with an ECDSA one the `ECDHE-ECDSA-…` ones.
    /// TLS 1.3's suites (all AEAD, all forward secret) stay OpenSSL's.
    public static let tls12Suites = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ]

    /// Which end of the handshake the context's streams play.
    public enum Role: Sendable { case server, client }

    /// The `SSL_CTX *`.
    let raw: OpaquePointer
    /// Server or client.
    public let role: Role
    /// True when the server requires and checks client certificates.
    public let requiresClientCertificate: Bool

    private init(role: Role, requiresClientCertificate: Bool) throws(TLSError) {
        TLSError.drainErrorQueue()
        guard let raw = SSL_CTX_new(role == .server ? TLS_server_method() : TLS_client_method()) else {
            throw TLSError.fromQueue("cannot create a TLS context")
        }
        self.raw = raw
        self.role = role
        self.requiresClientCertificate = requiresClientCertificate
        guard outatime_ctx_set_min_tls12(raw) == 1 else { throw TLSError.fromQueue("cannot require TLS 1.2") }
        guard SSL_CTX_set_cipher_list(raw, Self.tls12Suites.joined(separator: ":")) == 1 else {
            throw TLSError.fromQueue("cannot set the TLS 1.2 cipher suites")
        }
        if role == .server { outatime_ctx_set_server_preference(raw) }
        outatime_ctx_set_modes(raw)
        outatime_ctx_disable_session_cache(raw)
        if role == .server {
            // No resumption tickets: nothing to reuse them with.
            SSL_CTX_set_num_tickets(raw, 0)
        }
    }

    deinit { SSL_CTX_free(raw) }

    /// A server context from PEM files: `certificateFile` holds the server's
    /// certificate followed by any intermediates, `privateKeyFile` its key.
    /// With `clientCAFile`, every client must present a certificate that
    /// chains to one of its CAs (mutual TLS).
    public static func server(certificateFile: String, privateKeyFile: String,
                              clientCAFile: String? = nil) throws(TLSError) -> TLSContext {
        let context = try TLSContext(role: .server, requiresClientCertificate: clientCAFile != nil)
        try context.loadIdentity(certificateFile: certificateFile, privateKeyFile: privateKeyFile)
        if let clientCAFile {
            try requireReadable(clientCAFile, what: "client CA file")
            guard SSL_CTX_load_verify_locations(context.raw, clientCAFile, nil) == 1,
                  let names = SSL_load_client_CA_file(clientCAFile) else {
                throw TLSError.fromQueue("cannot load the client CA file \(clientCAFile) (PEM certificates expected)")
            }
            SSL_CTX_set_client_CA_list(context.raw, names)
            SSL_CTX_set_verify(context.raw, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        }
        return context
    }

    /// A client context that checks the server's certificate chain against
    /// the PEM certificates in `caFile`, or the system's trust store when
    /// nil. The host name is checked per stream (``TLSStream/init(connecting:context:host:)``).
    /// `certificateFile` and `privateKeyFile` give a client certificate for
    /// servers that require one.
    public static func client(caFile: String? = nil, certificateFile: String? = nil,
                              privateKeyFile: String? = nil) throws(TLSError) -> TLSContext {
        let context = try TLSContext(role: .client, requiresClientCertificate: false)
        if let caFile {
            try requireReadable(caFile, what: "CA file")
            guard SSL_CTX_load_verify_locations(context.raw, caFile, nil) == 1 else {
                throw TLSError.fromQueue("cannot load the CA file \(caFile) (PEM certificates expected)")
            }
        } else if SSL_CTX_set_default_verify_paths(context.raw) != 1 {
            throw TLSError.fromQueue("cannot load the system's trusted certificates")
        }
        SSL_CTX_set_verify(context.raw, SSL_VERIFY_PEER, nil)
        if let certificateFile {
            try context.loadIdentity(certificateFile: certificateFile, privateKeyFile: privateKeyFile ?? certificateFile)
        }
        return context
    }

    private func loadIdentity(certificateFile: String, privateKeyFile: String) throws(TLSError) {
        try Self.requireReadable(certificateFile, what: "certificate file")
        try Self.requireReadable(privateKeyFile, what: "private key file")
        guard SSL_CTX_use_certificate_chain_file(raw, certificateFile) == 1 else {
            throw TLSError.fromQueue("cannot load the certificate chain from \(certificateFile) (PEM expected)")
        }
        guard SSL_CTX_use_PrivateKey_file(raw, privateKeyFile, SSL_FILETYPE_PEM) == 1 else {
            let reasons = TLSError.drainErrorQueue()
            if reasons.contains("key values mismatch") {
                throw TLSError("the private key in \(privateKeyFile) does not match the certificate in \(certificateFile)")
            }
            throw TLSError("cannot load the private key from \(privateKeyFile) (PEM expected)"
                + (reasons.isEmpty ? "" : ": " + reasons.joined(separator: "; ")))
        }
        guard SSL_CTX_check_private_key(raw) == 1 else {
            throw TLSError.fromQueue("the private key in \(privateKeyFile) does not match the certificate in \(certificateFile)")
        }
    }

    private static func requireReadable(_ path: String, what: String) throws(TLSError) {
        guard let file = fopen(path, "r") else {
            throw TLSError("cannot read the \(what) \(path): \(String(cString: strerror(errno)))")
        }
        fclose(file)
    }
}

/// SHA-256 digests (OpenSSL's), for code that must not see OpenSSL.
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        let run: (UnsafeBufferPointer<UInt8>) -> Void = { input in
            output.withUnsafeMutableBufferPointer { out in
                var length: UInt32 = 0
                _ = EVP_Digest(input.baseAddress, input.count, out.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        if bytes.withContiguousStorageIfAvailable(run) == nil {
            Array(bytes).withUnsafeBufferPointer(run)
        }
        return output
    }

    /// The digest of `bytes` as 64 lowercase hexadecimal digits (what
    /// `sha256sum` and `openssl dgst -sha256` print).
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in digest(bytes) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
