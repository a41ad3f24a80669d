import Foundation
import OutaTimeServer
import OutaTimeTestSupport
import Testing
import UV

/// A tokens-file entry for `token`, given as its SHA-256 (`"sha256"`), so
/// that tests may use short, readable tokens: the file refuses weak tokens
/// in the clear (TokenStrength), not digests.
func tokenEntry(_ token: String, _ name: String, _ role: String, channels: [String]? = nil) -> [String: Any] {
    var entry: [String: Any] = ["sha256": SHA256.hex(Array(token.utf8)), "name": name, "role": role]
    if let channels { entry["channels"] = channels }
    return entry
}

/// Writes `text` as a tokens file and expects the loader to refuse it with
/// a message containing `expected` and none of `secrets`.
func expectTokensFileRefused(_ text: String, _ expected: String, secrets: [String],
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
    let file = try TokensFile([])
    try file.write(text: text)
    do {
        _ = try TokenTable.load(from: file.path)
        Issue.record("accepted: \(text)", sourceLocation: sourceLocation)
    } catch {
        #expect(error.message.contains(expected), "\(error.message)", sourceLocation: sourceLocation)
        for secret in secrets {
            #expect(!error.message.contains(secret), "a secret leaked into the message: \(error.message)",
                    sourceLocation: sourceLocation)
        }
    }
}
