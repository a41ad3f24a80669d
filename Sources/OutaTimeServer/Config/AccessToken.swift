import Foundation

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

/// One entry of the tokens file: `{"token": "…", "name": "…", "role": "operate"}`.
public struct AccessToken: Sendable, Codable, Equatable {
    /// The secret a client sends in `hello`. Never logged.
    public var token: String
    /// The operator's display name, shown to other watchers.
    public var name: String
    /// What the token allows.
    public var role: Role

    /// Creates a token entry.
    public init(token: String, name: String, role: Role) {
        self.token = token
        self.name = name
        self.role = role
    }

    /// Reads a tokens file: a JSON array of entries. Errors name the file and
    /// the problem, never a token's value.
    public static func load(from path: String) throws(ConfigError) -> [AccessToken] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigError(message: "cannot read tokens file \(path): \(error.localizedDescription)")
        }
        let tokens: [AccessToken]
        do {
            tokens = try JSONDecoder().decode([AccessToken].self, from: data)
        } catch {
            throw ConfigError(message: "tokens file \(path) is not a JSON array of "
                + "{\"token\", \"name\", \"role\"} objects with role watch, operate or admin")
        }
        if tokens.isEmpty {
            throw ConfigError(message: "tokens file \(path) lists no tokens: nobody could connect")
        }
        if let index = tokens.firstIndex(where: { $0.token.isEmpty }) {
            throw ConfigError(message: "tokens file \(path): entry \(index) has an empty token")
        }
        if Set(tokens.map(\.token)).count != tokens.count {
            throw ConfigError(message: "tokens file \(path) lists the same token twice")
        }
        return tokens
    }
}
