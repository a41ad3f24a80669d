import Foundation
import OutaTimeProtocol

/// `Request.parse` and every field accessor on any frame body: no trap;
/// every refusal is a `ProtocolError` of the codes the contract gives it,
/// with a message; what an accessor returns is what the field holds and
/// lies within the range asked for; a request read is rebuilt from its
/// parts, written and read again to the same type, id and fields.
enum RequestChecks {
    /// The fields the server reads, plus one no operation has.
    static let keys = ["type", "id", "channel", "action", "args", "limit", "since", "data", "name", "token",
                       "protocol", "cursor", "reason", "unknown"]
    /// Ranges the server asks integer fields to lie in.
    static let ranges: [ClosedRange<Int64>] = [1...1000, 0...Int64.max, Int64.min...Int64.max, 1...1, 0...9_007_199_254_740_992]

    static func check(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
        let request: Request
        do throws(RequestParseError) {
            request = try Request.parse(input)
        } catch {
            switch error {
            case .badJSON(let problem):
                try expect(problem, [.badJSON], "parse")
            case .invalid(let id, let problem):
                try expect(problem, [.invalidRequest], "parse")
                if let id, RequestID(validating: json(id)) != id {
                    throw FuzzFailure(.request, "refused with id \(id), which is not valid itself")
                }
            }
            return
        }
        guard request.fields["type"] == .string(request.type) else {
            throw FuzzFailure(.request, "type '\(request.type)' but field \(String(describing: request.fields["type"]))")
        }
        if let id = request.id, request.fields["id"] != json(id) {
            throw FuzzFailure(.request, "id \(id) but field \(String(describing: request.fields["id"]))")
        }
        for key in Set(keys).union(request.fields.keys) {
            try accessors(request, key)
        }
        // Rebuilt from its parts, written and read again: the same request.
        let rebuilt = Request(type: request.type, id: request.id, fields: request.fields)
        guard rebuilt.fields == request.fields else {
            throw FuzzFailure(.request, "rebuilt fields \(rebuilt.fields) differ from \(request.fields)")
        }
        try JSONChecks.roundTrip(.object(request.fields), .request)
    }

    /// Every accessor on `key`: each returns what the field holds, or throws
    /// the code the contract gives.
    static func accessors(_ request: Request, _ key: String) throws(FuzzFailure) {
        let field = request.value(key)
        let present = field == .null ? nil : field
        let got = String(describing: field)
        let string = [.invalidRequest] as Set<ErrorCode>
        if let text = try attempt("optionalString('\(key)')", string, { () throws(ProtocolError) in try request.optionalString(key) }) ?? nil,
           present != .string(text) {
            throw FuzzFailure(.request, "optionalString('\(key)') gave '\(text)' for \(got)")
        }
        for maxLength in [0, 1, 64, 100] {
            if let text = try attempt("optionalString('\(key)', maxLength: \(maxLength))", string,
                                      { () throws(ProtocolError) in try request.optionalString(key, maxLength: maxLength) }) ?? nil,
               text.count > maxLength || text.utf8.count > 4 * maxLength || present != .string(text) {
                throw FuzzFailure(.request, "optionalString('\(key)', maxLength: \(maxLength)) gave \(text.count) characters for \(got)")
            }
        }
        _ = try attempt("string('\(key)')", string, { () throws(ProtocolError) in try request.string(key) })
        for range in ranges {
            if let number = try attempt("optionalInt('\(key)', in: \(range))", string,
                                        { () throws(ProtocolError) in try request.optionalInt(key, in: range) }) ?? nil,
               !range.contains(number) || present != .int(number) {
                throw FuzzFailure(.request, "optionalInt('\(key)', in: \(range)) gave \(number) for \(got)")
            }
            if let number = try attempt("int('\(key)', in: \(range))", string, { () throws(ProtocolError) in try request.int(key, in: range) }),
               !range.contains(number) || present != .int(number) {
                throw FuzzFailure(.request, "int('\(key)', in: \(range)) gave \(number) for \(got)")
            }
        }
        if let object = try attempt("optionalObject('\(key)')", string, { () throws(ProtocolError) in try request.optionalObject(key) }) ?? nil,
           present != .object(object) {
            throw FuzzFailure(.request, "optionalObject('\(key)') gave \(object) for \(got)")
        }
        if let channel = try attempt("channel('\(key)')", [.invalidRequest, .invalidChannel, .unknownKind],
                                     { () throws(ProtocolError) in try request.channel(key) }) {
            let again = try attempt("ChannelName.parse", [], { () throws(ProtocolError) in try ChannelName.parse(channel.description) })
            guard present == .string(channel.description), again == channel, ChannelName.isValidName(channel.name) else {
                throw FuzzFailure(.request, "channel('\(key)') gave \(channel) for \(got)")
            }
        }
    }

    /// The result of `call`, or nil when it refused with one of `codes` and a message.
    static func attempt<T>(_ call: String, _ codes: Set<ErrorCode>,
                           _ body: () throws(ProtocolError) -> T) throws(FuzzFailure) -> T? {
        do throws(ProtocolError) {
            return try body()
        } catch {
            try expect(error, codes, call)
            return nil
        }
    }

    /// A refusal has one of `codes` and a message.
    static func expect(_ error: ProtocolError, _ codes: Set<ErrorCode>, _ call: String) throws(FuzzFailure) {
        guard codes.contains(error.code), !error.message.isEmpty else {
            throw FuzzFailure(.request, "\(call) refused with \(error); expected one of \(codes.map(\.rawValue).sorted())")
        }
    }

    static func json(_ id: RequestID) -> JSONValue {
        switch id {
        case .int(let number): .int(number)
        case .string(let text): .string(text)
        }
    }
}
