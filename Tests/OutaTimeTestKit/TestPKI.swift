import Foundation

/// A throwaway certificate authority in a temporary folder, made with the
/// `openssl` command: a CA, and leaf certificates (EC P-256) it signs for
/// servers and clients. For TLS tests; nothing here is fit for use.
public final class TestPKI: @unchecked Sendable {
    /// The folder holding every file.
    public let directory: URL
    /// The CA's certificate (PEM): what clients trust.
    public let caFile: String
    private let caKeyFile: String

    /// A certificate and its key, as PEM files.
    public struct Identity: Sendable {
        public let certificateFile: String
        public let keyFile: String

        /// An identity whose files are at these paths.
        public init(certificateFile: String, keyFile: String) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }
    }

    /// Makes a new CA named `name` in a fresh temporary folder.
    public init(name: String = "OutaTime Test CA") throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("outatime-pki-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        caFile = directory.appendingPathComponent("ca.pem").path
        caKeyFile = directory.appendingPathComponent("ca.key").path
        try Self.openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", caKeyFile])
        try Self.openssl(["req", "-x509", "-new", "-key", caKeyFile, "-subj", "/CN=\(name)", "-days", "2",
                          "-addext", "basicConstraints=critical,CA:TRUE",
                          "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", caFile])
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// A leaf certificate signed by the CA for `commonName`, valid for the
    /// DNS names and IP addresses in `names` (e.g. `["localhost", "127.0.0.1"]`).
    /// `expired` makes one whose validity ended a day before it began (so,
    /// in the past); `client` marks it for client authentication.
    /// `organization` adds an `O=` to the subject (`/O=…/CN=…`, which
    /// OpenSSL's RFC 2253 form prints as `CN=…,O=…`). `rsa` makes an RSA
    /// 2048 key instead of EC P-256 (what static-RSA suites need).
    public func issue(_ commonName: String, names: [String] = [], expired: Bool = false,
                      client: Bool = false, organization: String? = nil, rsa: Bool = false) throws -> Identity {
        let stem = directory.appendingPathComponent("\(commonName)-\(UUID().uuidString.prefix(8))").path
        let key = stem + ".key", request = stem + ".csr", certificate = stem + ".pem", extensions = stem + ".ext"
        if rsa {
            try Self.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key])
        } else {
            try Self.openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key])
        }
        try Self.openssl(["req", "-new", "-key", key, "-subj", (organization.map { "/O=\($0)" } ?? "") + "/CN=\(commonName)",
                          "-out", request])
        var lines = ["basicConstraints=CA:FALSE", "extendedKeyUsage=\(client ? "clientAuth" : "serverAuth")"]
        if !names.isEmpty {
            let alternatives = names.map { $0.first!.isNumber || $0.contains(":") ? "IP:\($0)" : "DNS:\($0)" }
            lines.append("subjectAltName=" + alternatives.joined(separator: ","))
        }
        try lines.joined(separator: "\n").write(toFile: extensions, atomically: true, encoding: .utf8)
        try Self.openssl(["x509", "-req", "-in", request, "-CA", caFile, "-CAkey", caKeyFile, "-CAcreateserial",
                          "-days", expired ? "-1" : "2", "-extfile", extensions, "-out", certificate])
        return Identity(certificateFile: certificate, keyFile: key)
    }

    /// Runs `openssl` with `arguments`; throws with its output if it fails.
    public static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestPKIError(message: "openssl \(arguments.joined(separator: " ")) failed: "
                + String(decoding: text, as: UTF8.self))
        }
    }
}

/// An `openssl` command that failed.
public struct TestPKIError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
