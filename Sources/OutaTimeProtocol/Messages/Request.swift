import Foundation

/// Why a frame body is not a usable request. Both keep the connection: the
/// framing is still in sync (§1).
public enum RequestParseError: Error, Sendable, Equatable {
    /// Not UTF-8 JSON, or JSON but not an object: answered with an `error`
    /// push (`bad_json`), since no `id` could be read.
    case badJSON(ProtocolError)
    /// A JSON object with a bad `id` or `type` (`invalid_request`). `id` is
    /// the request's id when that was valid, so the failure can be a reply;
    /// nil means an `error` push.
    case invalid(id: RequestID?, ProtocolError)
}

/// One client request: a JSON object with a string `type` and an optional
/// `id` (§2). The other fields are read with the typed accessors in
/// `Request+Fields.swift`; unknown fields are ignored.
public struct Request: Sendable {
    /// The operation, e.g. `subscribe`. Not checked against the known
    /// operations here: that is the dispatcher's `unknown_type`.
    public let type: String
    /// The client's id, to echo in the reply; nil when absent or `null`.
    public let id: RequestID?
    /// The whole object, `type` and `id` included.
    public var fields: [String: JSONValue] {
        Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    /// The object's members in the order sent; a repeated key counts by
    /// its last value. Requests have a handful of members, each read once
    /// or twice: a linear search beats hashing them into a dictionary
    /// (docs/BENCHMARKS.md, "Replies written directly").
    private let members: [JSONMember]

    /// The value of member `key`, the last one if repeated; nil when absent.
    public func member(_ key: String) -> JSONValue? {
        members.last { $0.key == key }?.value
    }

    /// Creates a request from parts, e.g. in tests or in-process clients.
    public init(type: String, id: RequestID? = nil, fields: [String: JSONValue] = [:]) {
        var fields = fields
        fields["type"] = .string(type)
        if let id {
            switch id {
            case .int(let number): fields["id"] = .int(number)
            case .string(let text): fields["id"] = .string(text)
            }
        }
        self.type = type
        self.id = id
        self.members = fields.map { JSONMember(key: $0.key, value: $0.value) }
    }

    /// Parses a frame body.
    ///
    /// - Parameters:
    ///   - body: the frame body; read only during the call, never copied
    ///     before decoding.
    /// - Throws: ``RequestParseError/badJSON(_:)`` when the body is not
    ///   UTF-8 JSON or not an object; ``RequestParseError/invalid(id:_:)``
    ///   with a nil id when `id` is not an integer 0…2^53 or a string of at
    ///   most 64 characters, and with the valid id when `type` is missing or
    ///   not a string.
    public static func parse(_ body: UnsafeRawBufferPointer) throws(RequestParseError) -> Request {
        let members: [JSONMember]
        do {
            var reader = JSONReader(body)
            if let object = try reader.readTopLevelMembers() {
                members = object
            } else {
                // Not an object: read it whole to say what it is instead.
                let value = try JSONValue.parse(bytes: body)
                throw RequestParseError.badJSON(ProtocolError(
                    .badJSON,
                    "a request must be a JSON object like {\"type\":\"ping\"}, got \(value.typeName)"
                ))
            }
        } catch let error as RequestParseError {
            throw error
        } catch {
            throw .badJSON(ProtocolError(
                .badJSON,
                "frame body of \(body.count) bytes is not valid UTF-8 JSON (\(error)); it starts with \(preview(body))"
            ))
        }
        func member(_ key: String) -> JSONValue? { members.last { $0.key == key }?.value }

        var id: RequestID?
        if let rawID = member("id"), rawID != .null {
            guard let valid = RequestID(validating: rawID) else {
                // A number is named as the client wrote it: `1e-400` reads as 0.0.
                var given = rawID.errorDescription
                if case .double = rawID, let text = JSONReader.memberText("id", in: body) {
                    given = text.utf8.count <= 40 ? text : TextLength.quoted(text)
                }
                throw .invalid(id: nil, ProtocolError(
                    .invalidRequest,
                    "field 'id' must be \(RequestID.rule), got \(given)"
                ))
            }
            id = valid
        }

        switch member("type") {
        case .string(let type):
            return Request(parsedType: type, id: id, members: members)
        case nil, .null?:
            throw .invalid(id: id, ProtocolError(
                .invalidRequest,
                "field 'type' is required (a string naming the operation, like 'subscribe')"
            ))
        case let other?:
            throw .invalid(id: id, ProtocolError(
                .invalidRequest,
                "field 'type' must be a string naming the operation, like 'subscribe', got \(other.errorDescription)"
            ))
        }
    }

    /// Keeps the parsed object as it is.
    private init(parsedType type: String, id: RequestID?, members: [JSONMember]) {
        self.type = type
        self.id = id
        self.members = members
    }

    /// The first bytes of a bad body, quoted, for the error message.
    private static func preview(_ body: UnsafeRawBufferPointer) -> String {
        let limit = 32
        let text = String(decoding: body.prefix(limit), as: UTF8.self)
        return "'\(text)\(body.count > limit ? "…" : "")'"
    }
}
