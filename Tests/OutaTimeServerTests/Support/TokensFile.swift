import Foundation
import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// A tokens-file entry.
func tokenEntry(_ token: String, _ name: String, _ role: String, channels: [String]? = nil) -> [String: Any] {
    var entry: [String: Any] = ["token": token, "name": name, "role": role]
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
