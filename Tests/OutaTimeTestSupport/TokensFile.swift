import Foundation
import OutaTimeServer

/// A tokens file (`--tokens`) in a folder of its own, which a test rewrites
/// between reloads as an operator would: the whole file at once.
public final class TokensFile {
    public let folder: TemporaryFolder
    /// The file's path.
    public let path: String

    /// Writes `entries` (tokens-file entries as JSON objects).
    public init(_ entries: [[String: Any]]) throws {
        folder = try TemporaryFolder()
        path = folder.path("tokens.json")
        try write(entries)
    }

    /// Replaces the file's content with `entries`.
    public func write(_ entries: [[String: Any]]) throws {
        try write(text: String(decoding: try JSONSerialization.data(withJSONObject: entries), as: UTF8.self))
    }

    /// Replaces the file's content with `text`, atomically (rename).
    public func write(text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Sets `config` to read this file at start and on every reload.
    public func configure(_ config: inout ServerConfig) {
        config.tokensFile = path
    }
}
