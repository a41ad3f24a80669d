/// The optional `id` of a request, chosen by the client and echoed back
/// unchanged in its reply (§2). On the wire it is a bare JSON integer or
/// string.
public enum RequestID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// An integer id, 0…2^53.
    case int(Int64)
    /// A string id of at most 64 characters.
    case string(String)

    /// The largest integer id: 2^53, the last integer every JSON parser
    /// (including JavaScript's doubles) holds exactly.
    public static let maxInteger: Int64 = 9_007_199_254_740_992
    /// The longest string id, in characters (and 4 × as many UTF-8 bytes,
    /// ``TextLength``).
    public static let maxStringLength = 64
    /// The length rule of string ids.
    static let stringLength = TextLength(max: maxStringLength)

    /// The rule, for error messages.
    static let rule = "an integer 0…\(maxInteger) or a string \(stringLength.rule)"

    /// Validates a request's `id` field: an integer in 0…2^53 or a string of
    /// at most 64 characters and 256 bytes. Returns nil for anything else.
    ///
    /// An integer is a number whose **text** is an exact integer: the JSON
    /// reader makes those `.int` (`5`, `5.0`, `5e0`). A `.double` is a
    /// number with a fraction (`1e-400`, `9007199254740992.5`) or beyond 64
    /// bits, and is refused: echoed as its nearest double (`0`, 2^53) it
    /// would no longer be the client's id.
    public init?(validating value: JSONValue) {
        switch value {
        case .int(let number) where (0...Self.maxInteger).contains(number):
            self = .int(number)
        case .string(let text) where Self.stringLength.allows(text):
            self = .string(text)
        default:
            return nil
        }
    }

    /// Decodes a bare integer or string. Ranges are not checked here: this
    /// is how clients read the ids the server echoes; requests are checked
    /// with ``init(validating:)``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            self = .int(number)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    /// Encodes the id as a bare JSON integer or string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .int(let number): try container.encode(number)
        case .string(let text): try container.encode(text)
        }
    }

    /// The id as it appears in JSON: `7` or `"a7"`, for logs.
    public var description: String {
        switch self {
        case .int(let number): "\(number)"
        case .string(let text): "\"\(text)\""
        }
    }
}
