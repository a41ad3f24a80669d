import Foundation
import Logging
import OutaTimeProtocol

/// Logs one readable line per event (`--log-format text`, the default):
///
///     2026-11-27T20:08:17.123Z notice outatime: conn.id=7 name="Marty role=admin" peer=10.0.0.9 [OutaTimeServer] hello refused
///
/// The shape of swift-log's `StreamLogHandler` (time, level, label, the
/// metadata in key order, the source module, the message), with one
/// difference that matters: values are quoted and escaped whenever they
/// could be read as more than one value (``LogText/value(_:)``), and the
/// message has its control and format characters escaped, so text a client
/// chose (a name, a channel) cannot forge a field, end the line or steer a
/// terminal. One `write` per line, so lines from threads never interleave.
public struct TextLogHandler: LineLogHandler {
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
        let time = Self.timestamp
        var line = "\(time) \(event.level) \(LogText.value(label)):"
        for (key, value) in sortedMetadata(of: event) {
            line += " \(LogText.value(key))=\(LogText.value("\(value)"))"
        }
        line += " [\(LogText.value(event.source))] \(LogText.message("\(event.message)"))\n"
        output(line)
    }
}
