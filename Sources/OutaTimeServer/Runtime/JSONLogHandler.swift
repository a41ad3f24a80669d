import Foundation
import Logging
import OutaTimeProtocol

/// Logs one JSON object a line (`--log-format json`), for log shippers.
///
/// Keys, in this order: `ts` (ISO 8601 with milliseconds, UTC), `level`,
/// `logger` (the label), `msg`, then the metadata in key order, with the
/// server's own keys as they are (`conn.id`, `channel`, `reason`, `error`,
/// …). Values are strings; nested metadata is written as its description.
/// Written with the project's encoder (``MessageEncoder``), one `write` per
/// line, so lines from threads never interleave; C1 and Unicode format
/// characters, which the encoder leaves as they are, are written as
/// `\uXXXX` escapes (``LogText/json(_:)``).
public struct JSONLogHandler: LineLogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let output: @Sendable (String) -> Void

    /// A handler giving each line (with its newline) to `output`.
    public init(label: String, output: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.output = output
    }

    public func log(event: LogEvent) {
        var fields: [(String, String)] = [
            ("ts", Self.timestamp),
            ("level", event.level.rawValue),
            ("logger", label),
            ("msg", "\(event.message)"),
        ]
        for (key, value) in sortedMetadata(of: event) where !["ts", "level", "logger", "msg"].contains(key) {
            fields.append((key, "\(value)"))
        }
        guard let line = try? MessageEncoder().text(Line(fields: fields)) else { return }
        output(LogText.json(line) + "\n")
    }

    /// The fields in order, as one JSON object.
    private struct Line: Encodable {
        let fields: [(String, String)]

        struct Key: CodingKey {
            let stringValue: String
            init(stringValue: String) { self.stringValue = stringValue }
            var intValue: Int? { nil }
            init?(intValue: Int) { nil }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            for (key, value) in fields { try container.encode(value, forKey: Key(stringValue: key)) }
        }
    }
}
