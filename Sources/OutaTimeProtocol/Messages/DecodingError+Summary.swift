extension DecodingError {
    /// One line naming the member and what was wrong with it, for logs and
    /// a client's protocol-violation reason: `seq: Expected to decode Int64
    /// but found a string instead.`, `from.name: missing`, `joined[0]: null
    /// where a value is required`. `DecodingError`'s own description spells
    /// out coding-key structs and contexts, which nobody reads twice.
    public var summary: String {
        switch self {
        case .keyNotFound(let key, let context):
            "\(Self.path(context.codingPath + [key])): missing"
        case .valueNotFound(_, let context):
            // Not the type: JSONDecoder names its own storage there
            // (`Dictionary<String, Any>` for a missing `Watcher`).
            "\(Self.path(context.codingPath)): null where a value is required"
        case .typeMismatch(_, let context), .dataCorrupted(let context):
            "\(Self.path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            "\(self)"
        }
    }

    /// `from.name`, `joined[0].session`; `the frame` for the top level.
    private static func path(_ keys: [any CodingKey]) -> String {
        var text = ""
        for key in keys {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text.isEmpty ? "the frame" : text
    }
}
