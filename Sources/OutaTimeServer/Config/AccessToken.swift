import Foundation
import OutaTimeProtocol

/// What a connection may do (contract §7): `watch` < `operate` < `admin`.
public enum Role: String, Sendable, Codable, Comparable, CaseIterable {
    /// Read: subscribe, get, list, history, stats, read-only commands.
    case watch
    /// Watch, plus publish and state-changing commands.
    case operate
    /// Everything.
    case admin

    private var rank: Int {
        switch self {
        case .watch: 0
        case .operate: 1
        case .admin: 2
        }
    }

    public static func < (lhs: Role, rhs: Role) -> Bool { lhs.rank < rhs.rank }
}

/// One entry of the tokens file:
/// `{"token": "…", "name": "…", "role": "operate", "channels": ["starport/*"]}`,
/// or, for clients that present a certificate (mutual TLS),
/// `{"certificate_subject": "CN=board-1,O=Hill Valley", "name": "…", "role": "watch"}`.
public struct AccessToken: Sendable, Equatable {
    /// How the entry's clients are recognised: a token, or a certificate subject.
    public var key: AccessKey
    /// The operator's display name, shown to other watchers.
    public var name: String
    /// What the token allows.
    public var role: Role
    /// The channels the token may name (`channels`; every channel without it).
    public var scope: ChannelScope

    /// Creates a token entry; `scope` defaults to every channel.
    public init(token: String, name: String, role: Role, scope: ChannelScope = .everything) {
        self.init(key: .token(.plain(token)), name: name, role: role, scope: scope)
    }

    /// Creates an entry for the clients whose verified certificate has the
    /// subject `certificateSubject` (exactly as ``UV/TLSStream/peerCertificateSubject``
    /// gives it); `scope` defaults to every channel.
    public init(certificateSubject: String, name: String, role: Role, scope: ChannelScope = .everything) {
        self.init(key: .certificateSubject(certificateSubject), name: name, role: role, scope: scope)
    }

    /// The keys an entry may have. Any other key is refused rather than
    /// ignored: a misspelt `"channel"` must not silently grant every channel.
    /// The longest display name, in characters (as hello's `name`).
    static let maxNameLength = 100

    static let keys = ["token", "sha256", "certificate_subject", "name", "role", "channels"]

    /// Reads one entry of a tokens file. The problem says what is wrong
    /// with the entry, never a token's value.
    init(entry: JSONValue) throws(EntryProblem) {
        guard case .object(let fields) = entry else {
            throw EntryProblem(name: nil, problem: "\(entry.typeNameWithArticle), not an object")
        }
        if let unknown = fields.keys.sorted().first(where: { !Self.keys.contains($0) }) {
            throw EntryProblem(name: nil, problem: "unknown key '\(unknown.prefix(40))'; the keys are \(Self.keys.joined(separator: ", "))")
        }
        guard case .string(let name)? = fields["name"] else {
            throw EntryProblem(name: nil, problem: "'name' (the display name) is missing or not a string")
        }
        // The display name follows hello's `name` rule: it is shown to
        // watchers and becomes a dispatch's `created_by`, so it counts in
        // the frame-size proof (PROTOCOL.md §11, "Frame bounds").
        let nameRule = TextLength(max: Self.maxNameLength)
        guard nameRule.allows(name) else {
            throw EntryProblem(name: String(name.unicodeScalars.prefix(40).map(Character.init)),
                               problem: "'name' must be a string \(nameRule.rule), got one of \(TextLength.measure(name))")
        }
        if let found = TextLength.firstControlCharacter(in: name) {
            throw EntryProblem(name: nil, problem: "'name' \(TextLength.controlProblem(found))")
        }
        if let found = TextLength.firstFormatCharacter(in: name) {
            throw EntryProblem(name: nil, problem: "'name' \(TextLength.formatProblem(found))")
        }
        func fail(_ problem: String) -> EntryProblem {
            EntryProblem(name: name, problem: problem)
        }
        // The token in the clear, its SHA-256 digest, or a certificate
        // subject: exactly one.
        let present = ["token", "sha256", "certificate_subject"].filter { fields[$0] != nil }
        guard present.count == 1 else {
            throw fail(present.isEmpty
                ? "needs 'token' (the token), 'sha256' (its SHA-256 in hexadecimal) or 'certificate_subject' "
                    + "(the subject of a client certificate, with --tls-client-ca)"
                : "has " + present.map { "'\($0)'" }.joined(separator: " and ") + "; give exactly one of them")
        }
        let key: AccessKey
        switch (present[0], fields[present[0]]) {
        case ("token", .string(let token)?):
            guard !token.isEmpty else { throw fail("the token is empty") }
            key = .token(.plain(token))
        case ("sha256", .string(let hex)?):
            guard let digest = TokenSecret.sha256(hex: hex) else {
                throw fail("'sha256' must be 64 hexadecimal digits (the SHA-256 of the token, as sha256sum prints it); "
                    + "got \(hex.count) characters")
            }
            key = .token(digest)
        case ("certificate_subject", .string(let subject)?):
            if let problem = AccessKey.problem(certificateSubject: subject) { throw fail(problem) }
            key = .certificateSubject(subject)
        case (let field, let value?):
            throw fail("'\(field)' is \(value.typeNameWithArticle), not a string")
        default:
            throw fail("'\(present[0])' is missing")
        }
        let allowedRoles = Role.allCases.map(\.rawValue).joined(separator: ", ")
        guard case .string(let roleText)? = fields["role"] else {
            throw fail("'role' is missing or not a string; roles are \(allowedRoles)")
        }
        guard let role = Role(rawValue: roleText) else {
            throw fail("role '\(roleText.prefix(40))' is not one of \(allowedRoles)")
        }
        var scope = ChannelScope.everything
        if let channels = fields["channels"] {
            guard case .array(let items) = channels else {
                throw fail("'channels' is \(channels.typeNameWithArticle), not an array of channel patterns")
            }
            guard !items.isEmpty else {
                throw fail("'channels' is empty: the token could use no channel (leave 'channels' out for every channel)")
            }
            var patterns: [ChannelPattern] = []
            for item in items {
                guard case .string(let text) = item else {
                    throw fail("'channels' holds \(item.typeNameWithArticle); each pattern is a string")
                }
                do {
                    patterns.append(try ChannelPattern.parse(text))
                } catch {
                    throw fail(error.message)
                }
            }
            scope = .only(patterns)
        }
        self.init(key: key, name: name, role: role, scope: scope)
    }

    /// An entry with a given key.
    init(key: AccessKey, name: String, role: Role, scope: ChannelScope) {
        self.key = key
        self.name = name
        self.role = role
        self.scope = scope
    }
}

/// How a tokens-file entry recognises its clients: exactly one per entry.
public enum AccessKey: Sendable, Hashable {
    /// A token sent in `hello` (`token` or `sha256` in the file), matched as
    /// its SHA-256 digest in constant time (``TokenTable/match(_:)``).
    case token(TokenSecret)
    /// The subject of a client certificate (`certificate_subject`) that the
    /// TLS listener verified against `--tls-client-ca`, compared exactly,
    /// byte for byte, with the certificate's subject in OpenSSL's RFC 2253
    /// one-line form (``UV/TLSStream/peerCertificateSubject``), e.g.
    /// `CN=board-1,O=Hill Valley`. A subject is no secret (the certificate's
    /// signature is the proof), so it is not compared in constant time.
    case certificateSubject(String)

    /// True for a certificate entry.
    var isCertificateSubject: Bool {
        if case .certificateSubject = self { true } else { false }
    }

    /// The longest `certificate_subject` accepted, in bytes.
    static let maxSubjectBytes = 1024

    /// What is wrong with `subject` as a `certificate_subject`, or nil.
    static func problem(certificateSubject subject: String) -> String? {
        let hint = "the subject as `openssl x509 -noout -subject -nameopt RFC2253 -in CERT` prints it "
            + "after 'subject=', e.g. \"CN=board-1,O=Hill Valley\""
        if subject.isEmpty { return "'certificate_subject' is empty; give \(hint)" }
        if subject.utf8.count > maxSubjectBytes {
            return "'certificate_subject' is \(subject.utf8.count) bytes long (at most \(maxSubjectBytes)); give \(hint)"
        }
        if subject.hasPrefix("subject=") || subject.hasPrefix("subject =") {
            return "'certificate_subject' starts with 'subject=': leave that out and give \(hint)"
        }
        if !subject.contains("=") {
            return "'certificate_subject' '\(subject.prefix(100))' is not a distinguished name (no 'type=value'); give \(hint)"
        }
        return nil
    }
}

/// What is wrong with one tokens-file entry; ``TokenTable/load(from:)``
/// adds the file and the entry's position.
struct EntryProblem: Error {
    /// The entry's display name, once it was read.
    let name: String?
    /// What is wrong and what is allowed.
    let problem: String
}

extension JSONValue {
    /// `a string`, `an object`, …, for messages.
    var typeNameWithArticle: String {
        let name = typeName
        return (name.first.map { "aeiou".contains($0) } ?? false ? "an " : "a ") + name
    }
}
