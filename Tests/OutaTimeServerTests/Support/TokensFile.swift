import Foundation
import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// A tokens file (`--tokens`) in a folder of its own, which a test rewrites
/// between reloads as an operator would: the whole file at once.
final class TokensFile {
    let folder: TemporaryFolder
    /// The file's path.
    let path: String

    /// Writes `entries` (tokens-file entries as JSON objects).
    init(_ entries: [[String: Any]]) throws {
        folder = try TemporaryFolder()
        path = folder.path("tokens.json")
        try write(entries)
    }

    /// Replaces the file's content with `entries`.
    func write(_ entries: [[String: Any]]) throws {
        try write(text: String(decoding: try JSONSerialization.data(withJSONObject: entries), as: UTF8.self))
    }

    /// Replaces the file's content with `text`, atomically (rename).
    func write(text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Sets `config` to read this file at start and on every reload.
    func configure(_ config: inout ServerConfig) {
        config.tokensFile = path
    }
}

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
