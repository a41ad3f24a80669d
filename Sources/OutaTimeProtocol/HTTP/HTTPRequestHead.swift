/// An HTTP/1.x request head as ``HTTPHeadParser`` accepts it: `GET` or
/// `HEAD`, an origin-form target, version 1.0 or 1.1, and at most
/// ``HTTPHeadParser/Limits/maxHeaders`` fields. No body ever follows it.
public struct HTTPRequestHead: Sendable, Equatable {
    /// The methods served. Any other method is `405 Method Not Allowed`.
    public enum Method: String, Sendable, Equatable, CaseIterable {
        case get = "GET"
        case head = "HEAD"
    }

    /// The HTTP versions served. Any other is `505`.
    public enum Version: String, Sendable, Equatable {
        case http10 = "HTTP/1.0"
        case http11 = "HTTP/1.1"
    }

    /// One header field, in the order sent. Names are lower-cased (field
    /// names are case-insensitive); values have their surrounding spaces
    /// and tabs removed.
    public struct Field: Sendable, Equatable {
        public let name: String
        public let value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public let method: Method
    /// The path of the target, as sent (percent-escapes not decoded), e.g. `/metrics`.
    public let path: String
    /// The query after `?`, as sent; nil when the target has none.
    public let query: String?
    public let version: Version
    public let fields: [Field]

    public init(method: Method, path: String, query: String?, version: Version, fields: [Field]) {
        self.method = method
        self.path = path
        self.query = query
        self.version = version
        self.fields = fields
    }

    /// The value of the first field named `name` (any case), or nil.
    public func field(_ name: String) -> String? {
        let wanted = name.lowercased()
        return fields.first { $0.name == wanted }?.value
    }

    /// Whether the connection stays open after the response: HTTP/1.1
    /// unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    public var keepsAlive: Bool {
        let options = fields.filter { $0.name == "connection" }
            .flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingSpaces().lowercased() }
        switch version {
        case .http11: return !options.contains("close")
        case .http10: return options.contains("keep-alive")
        }
    }
}

/// A status the HTTP layer answers with.
public enum HTTPStatus: Int, Sendable, Equatable {
    case ok = 200
    case badRequest = 400
    /// A WebSocket upgrade from an origin not allowed (issue 28).
    case forbidden = 403
    case notFound = 404
    case methodNotAllowed = 405
    case requestTimeout = 408
    /// A WebSocket upgrade asking for a version other than 13.
    case upgradeRequired = 426
    case requestHeaderFieldsTooLarge = 431
    case serviceUnavailable = 503
    case httpVersionNotSupported = 505

    /// The reason phrase of RFC 9110.
    public var reasonPhrase: String {
        switch self {
        case .ok: "OK"
        case .badRequest: "Bad Request"
        case .forbidden: "Forbidden"
        case .notFound: "Not Found"
        case .methodNotAllowed: "Method Not Allowed"
        case .requestTimeout: "Request Timeout"
        case .upgradeRequired: "Upgrade Required"
        case .requestHeaderFieldsTooLarge: "Request Header Fields Too Large"
        case .serviceUnavailable: "Service Unavailable"
        case .httpVersionNotSupported: "HTTP Version Not Supported"
        }
    }
}

/// Why a request head was refused: the status to answer with and a
/// one-line reason naming what was wrong (for the response body and logs;
/// it quotes at most a few bytes of the request).
public struct HTTPHeadError: Error, Sendable, Equatable, CustomStringConvertible {
    public let status: HTTPStatus
    public let reason: String

    public init(_ status: HTTPStatus, _ reason: String) {
        self.status = status
        self.reason = reason
    }

    public var description: String { "\(status.rawValue) \(status.reasonPhrase): \(reason)" }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    func trimmingSpaces() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
