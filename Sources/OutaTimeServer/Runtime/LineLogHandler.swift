import Foundation
import Logging
import OutaTimeProtocol

/// What the server's two log formats (``TextLogHandler``,
/// ``JSONLogHandler``) share: a label, a level, the handler's own metadata,
/// and one `output` call per line (one `write`, so lines from threads never
/// interleave). Each format only says how an event becomes its line.
public protocol LineLogHandler: LogHandler {
    /// A handler giving each line (with its newline) to `output`.
    init(label: String, output: @escaping @Sendable (String) -> Void)
}

extension LineLogHandler {
    /// A handler writing to standard error.
    public static func standardError(label: String) -> Self {
        Self(label: label) { line in FileHandle.standardError.write(Data(line.utf8)) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// The handler's metadata with the event's over it, in key order.
    func sortedMetadata(of event: LogEvent) -> [(key: String, value: Logger.Metadata.Value)] {
        metadata.merging(event.metadata ?? [:]) { _, new in new }.sorted { $0.key < $1.key }
    }

    /// Now, as both formats write it: ISO 8601 with milliseconds, UTC.
    static var timestamp: String {
        ISOTime.format(milliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }
}
