import Foundation
import OutaTimeProtocol

/// One frame from the server, decoded in a single pass of `JSONDecoder`:
/// a reply, or a push read with the protocol module's ``ServerPush``, the
/// types the server encodes pushes with. Unknown fields are skipped and
/// unknown push types ignored (PROTOCOL.md §1: later revisions add them).
enum IncomingFrame: Decodable {
    /// The reply to the request with this id. An `ok: false` reply whose
    /// `error` lacks its object reads as `internal`.
    case reply(RequestID, Result<JSONValue, ServerError>)
    /// A push; ``ServerPush/unknown(type:)`` for a type this client does
    /// not know, to be ignored (§7).
    case push(ServerPush)
    /// An `error` push whose code ``ErrorCode`` does not have (one a later
    /// server added): reported all the same, its code as text.
    case errorWithNewCode(ServerError)
    /// A push of a known type that breaks its shape: what was wrong.
    case malformed(String)

    private enum Keys: String, CodingKey {
        case type, id, ok, result, error
    }

    /// Throws only when there is no string `type`: then the frame is not a
    /// message at all. A known type missing what it needs is ``malformed(_:)``.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let type = try container.decode(String.self, forKey: .type)
        if type == "reply" {
            self = Self.reply(in: container)
            return
        }
        do {
            self = .push(try ServerPush(from: decoder))
        } catch {
            if type == ErrorPush.wireType, let newCode = try? container.decode(ServerError.self, forKey: .error) {
                self = .errorWithNewCode(newCode)
            } else {
                self = .malformed("malformed '\(type)' push (\((error as? DecodingError)?.summary ?? "\(error)"))")
            }
        }
    }

    /// A reply's fields; a `result` or `error` of an unexpected shape reads
    /// as absent (the request's completion checks the result's shape).
    private static func reply(in container: KeyedDecodingContainer<Keys>) -> IncomingFrame {
        guard let id = try? container.decode(RequestID.self, forKey: .id),
              let ok = try? container.decode(Bool.self, forKey: .ok)
        else { return .malformed("a reply without 'id' or 'ok'") }
        if ok {
            let result = (try? container.decodeIfPresent(JSONValue.self, forKey: .result)) ?? nil
            return .reply(id, .success(result ?? .object([:])))
        }
        let error = (try? container.decode(ServerError.self, forKey: .error))
            ?? ServerError(code: "internal", message: "failed reply without an error object")
        return .reply(id, .failure(error))
    }

    /// Decodes a frame body; the bytes are read only during the call.
    static func decode(_ body: UnsafeRawBufferPointer, with decoder: JSONDecoder) throws -> IncomingFrame {
        guard let base = body.baseAddress, body.count > 0 else {
            return try decoder.decode(IncomingFrame.self, from: Data())
        }
        let data = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: body.count, deallocator: .none)
        return try decoder.decode(IncomingFrame.self, from: data)
    }
}

extension JSONValue {
    /// Decodes a `Decodable` from this value (a reply's `result`), through
    /// its JSON text: results are small and rare next to pushes.
    func decode<T: Decodable>(_ type: T.Type) throws(ClientError) -> T {
        if let same = self as? T { return same }
        do {
            let data = try JSONEncoder().encode(self)
            return try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw .unexpectedReply("result is not a \(T.self): \(error)")
        }
    }
}
