import Foundation
import OutaTimeProtocol

/// JSON forms of a channel state: a `JSONValue` for building wire messages and
/// compact text for the store. Both go through the kinds' `Codable`
/// conformances, which write every key (nulls included) with the domain.md
/// names, so there is one definition of the shape.
extension ChannelState {
    /// The state as a JSON object, every key present.
    public func json() -> JSONValue {
        let data = encodedData()
        // Decoding JSON we have just encoded ourselves cannot fail.
        guard let value = try? JSONValue.parse(data) else {
            preconditionFailure("ChannelState JSON did not decode as JSONValue")
        }
        return value
    }

    /// The state as compact JSON text, keys in the order the kind's
    /// `encode(to:)` writes them, so equal states store as equal text.
    public func jsonText() -> String {
        String(decoding: encodedData(), as: UTF8.self)
    }

    /// Reads a state of `kind` from its JSON object (as written by ``json()``).
    /// Throws ``StateDecodingError`` when a key is missing or has the wrong type.
    public init(kind: ChannelKind, json: JSONValue) throws {
        let data: Data
        do {
            data = try JSONEncoder().encode(json)
        } catch {
            throw StateDecodingError(kind: kind, message: "\(error)")
        }
        try self.init(kind: kind, data: data)
    }

    /// Reads a state of `kind` from JSON text (as written by ``jsonText()``).
    public init(kind: ChannelKind, jsonText: String) throws {
        try self.init(kind: kind, data: Data(jsonText.utf8))
    }

    private init(kind: ChannelKind, data: Data) throws {
        let decoder = JSONDecoder()
        do {
            switch kind {
            case .delorean: self = .delorean(try decoder.decode(DeLoreanState.self, from: data))
            case .starport: self = .starport(try decoder.decode(StarportState.self, from: data))
            case .timers: self = .timers(try decoder.decode(TimerListState.self, from: data))
            case .laps: self = .laps(try decoder.decode(LapSessionState.self, from: data))
            }
        } catch let error as DecodingError {
            throw StateDecodingError(kind: kind, message: Self.describe(error))
        } catch {
            throw StateDecodingError(kind: kind, message: "\(error)")
        }
    }

    private func encodedData() -> Data {
        let encoder = CompactJSONEncoder()
        let result: Result<[UInt8], any Error>
        switch self {
        case .delorean(let state): result = Result { try encoder.encode(state) }
        case .starport(let state): result = Result { try encoder.encode(state) }
        case .timers(let state): result = Result { try encoder.encode(state) }
        case .laps(let state): result = Result { try encoder.encode(state) }
        }
        // The states hold only strings, integers and arrays: nothing that
        // JSON cannot represent (such as a NaN), so a failure is a programming error.
        guard case .success(let bytes) = result else {
            preconditionFailure("ChannelState failed to encode: \(result)")
        }
        return Data(bytes)
    }

    /// A one-line reason that names the key path, e.g. `status: ...`.
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
            return keys.isEmpty ? "(top level)" : keys.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = context.codingPath.isEmpty ? "" : path(context) + "."
            return "missing key '\(parent)\(key.stringValue)'"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}
