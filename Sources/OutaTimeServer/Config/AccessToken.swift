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
/// `{"token": "…", "name": "…", "role": "operate", "channels": ["starport/*"]}`.
public struct AccessToken: Sendable, Equatable {
    /// How a client's token is recognised. Never logged.
    public var secret: TokenSecret
    /// The operator's display name, shown to other watchers.
    public var name: String
    /// What the token allows.
    public var role: Role
    /// The channels the token may name (`channels`; every channel without it).
    public var scope: ChannelScope

    /// Creates a token entry; `scope` defaults to every channel.
    public init(token: String, name: String, role: Role, scope: ChannelScope = .everything) {
        self.secret = .plain(token)
        self.name = name
        self.role = role
        self.scope = scope
    }

    /// The keys an entry may have. Any other key is refused rather than
    /// ignored: a misspelt `"channel"` must not silently grant every channel.
    static let keys = ["token", "sha256", "name", "role", "channels"]

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
        func fail(_ problem: String) -> EntryProblem {
            EntryProblem(name: name, problem: problem)
        }
        // The token in the clear, or its SHA-256 digest: exactly one.
        let secret: TokenSecret
        switch (fields["token"], fields["sha256"]) {
        case (.string(let token)?, nil):
            guard !token.isEmpty else { throw fail("the token is empty") }
            secret = .plain(token)
        case (nil, .string(let hex)?):
            guard let digest = TokenSecret.sha256(hex: hex) else {
                throw fail("'sha256' must be 64 hexadecimal digits (the SHA-256 of the token, as sha256sum prints it); "
                    + "got \(hex.count) characters")
            }
            secret = digest
        case (nil, nil):
            throw fail("needs 'token' (the token) or 'sha256' (its SHA-256 in hexadecimal)")
        case (.some, .some):
            throw fail("has both 'token' and 'sha256'; give one of them")
        default:
            throw fail("'token' and 'sha256' must be strings")
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
        self.init(secret: secret, name: name, role: role, scope: scope)
    }

    /// An entry with a given secret.
    init(secret: TokenSecret, name: String, role: Role, scope: ChannelScope) {
        self.secret = secret
        self.name = name
        self.role = role
        self.scope = scope
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
