import Foundation
import OutaTimeProtocol

/// The tokens a server accepts, as read from its tokens file (`--tokens`),
/// and the one way a presented token is looked up.
public struct TokenTable: Sendable {
    /// The entries, in file order.
    public let entries: [AccessToken]

    /// A table of `entries` (as given, e.g. by tests).
    public init(_ entries: [AccessToken]) {
        self.entries = entries
    }

    /// The token entry whose secret `presented` is, or nil.
    ///
    /// Every token entry is compared, each in constant time
    /// (``ConstantTime/equal(_:_:)``), and the hit is kept with a mask
    /// rather than a branch or an early return: the time a `hello` takes
    /// depends on the number of entries and the presented token's length,
    /// not on which entry matched or how much of a token an attacker has
    /// guessed. (A dictionary keyed by token would hash and compare the
    /// presented bytes: not constant time.) Certificate entries never match
    /// a token.
    func match(_ presented: PresentedToken) -> AccessToken? {
        var found = -1
        for index in entries.indices {
            let matches: Bool
            switch entries[index].key {
            case .token(let secret): matches = secret.matches(presented)
            case .certificateSubject: matches = false
            }
            let mask = 0 &- (matches ? 1 : 0)
            found = (index & mask) | (found & ~mask)
        }
        return found >= 0 ? entries[found] : nil
    }

    /// The certificate entry whose `certificate_subject` is exactly
    /// `subject` (the subject of a verified client certificate), or nil.
    func match(certificateSubject subject: String) -> AccessToken? {
        entries.first { $0.key == .certificateSubject(subject) }
    }

    /// True when some entry maps a certificate subject.
    var hasCertificateEntries: Bool {
        entries.contains { if case .certificateSubject = $0.key { true } else { false } }
    }

    /// The entry with the same key as `entry` (the same token, or the same
    /// certificate subject, across a reload), or nil when it is no longer listed.
    func entry(sameKeyAs entry: AccessToken) -> AccessToken? {
        entries.first { $0.key == entry.key }
    }

    /// Reads a tokens file: a JSON array of entries (``AccessToken``); a
    /// token given in the clear must be strong (``TokenStrength``).
    /// Errors name the file, the entry (counting from 1, with its display
    /// name once known) and the problem, never a token's value.
    public static func load(from path: String) throws(ConfigError) -> TokenTable {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigError(message: "cannot read tokens file \(path): \(error.localizedDescription)")
        }
        let document: JSONValue
        do {
            document = try JSONValue.parse(data)
        } catch {
            throw ConfigError(message: "tokens file \(path) is not valid JSON: \(error)")
        }
        guard case .array(let items) = document else {
            throw ConfigError(message: "tokens file \(path) must be a JSON array of "
                + "{\"token\" (or \"sha256\" or \"certificate_subject\"), \"name\", \"role\", \"channels\"?} objects, got \(document.typeNameWithArticle)")
        }
        if items.isEmpty {
            throw ConfigError(message: "tokens file \(path) lists no tokens: nobody could connect")
        }
        var entries: [AccessToken] = []
        var keys = Set<AccessKey>()
        for (index, item) in items.enumerated() {
            let entry: AccessToken
            do {
                entry = try AccessToken(entry: item)
            } catch {
                let named = error.name.map { " ('\($0.prefix(100))')" } ?? ""
                throw ConfigError(message: "tokens file \(path): entry \(index + 1) of \(items.count)\(named): \(error.problem)")
            }
            guard keys.insert(entry.key).inserted else {
                let what = if case .certificateSubject = entry.key { "certificate subject" } else { "token" }
                throw ConfigError(message: "tokens file \(path): entry \(index + 1) of \(items.count) ('\(entry.name)'): "
                    + "repeats the \(what) of an earlier entry; each \(what) must be listed once")
            }
            entries.append(entry)
        }
        // Only once every entry is well formed: a token given in the clear
        // must be strong enough to publish on a network (TokenStrength).
        for (index, item) in items.enumerated() {
            guard case .object(let fields) = item, case .string(let token)? = fields["token"],
                  let problem = TokenStrength.problem(token) else { continue }
            throw ConfigError(message: "tokens file \(path): entry \(index + 1) of \(items.count) ('\(entries[index].name)'): \(problem)")
        }
        return TokenTable(entries)
    }
}
