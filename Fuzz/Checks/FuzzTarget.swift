import Foundation

/// An invariant that did not hold on a fuzz input: what was expected and
/// what happened instead. The fuzz entry points turn it into a trap (which
/// libFuzzer reports as a crash, with the input); the tests report it as a
/// failure naming the corpus file.
public struct FuzzFailure: Error, CustomStringConvertible, Sendable {
    /// The target that found it.
    public var target: FuzzTarget
    /// The broken invariant, with the values involved.
    public var message: String

    /// Creates a failure of `target`.
    public init(_ target: FuzzTarget, _ message: String) {
        self.target = target
        self.message = message
    }

    /// `<target>: <message>`.
    public var description: String { "\(target.rawValue): \(message)" }
}

/// The fuzz targets: one libFuzzer binary each (`Fuzz/Targets/<name>.swift`),
/// each a call of ``check(_:)`` on the input. The checking code lives here,
/// in an ordinary module, so the tests run it over the seed corpus without
/// the sanitizer (`FuzzCorpusTests`) and it cannot rot.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// `FrameDecoder`: any byte stream, split into any chunks.
    case frame
    /// `JSONValue.parse`: any bytes.
    case json
    /// `Request.parse` and every field accessor: any frame body.
    case request
    /// Every kind's actions, clock and storage: bytes read as a sequence of
    /// steps (``ActionScript``).
    case actions
    /// `HTTPHeadParser`: any bytes, in any chunks (``HTTPChecks``).
    case http
    /// `ProxyHeader.parse`: any bytes, in any chunks (``ProxyChecks``).
    case proxy
    /// `WebSocketDecoder`: any byte stream, in any chunks (``WebSocketChecks``).
    case websocket

    /// Checks the invariants of this target on one input; throws the first
    /// one that does not hold. A trap inside the project code is a crash
    /// found, as is a throw.
    public func check(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
        switch self {
        case .frame: try FrameChecks.check(input)
        case .json: try JSONChecks.check(input)
        case .request: try RequestChecks.check(input)
        case .actions: try ActionChecks.check(input)
        case .http: try HTTPChecks.check(input)
        case .proxy: try ProxyChecks.check(input)
        case .websocket: try WebSocketChecks.check(input)
        }
    }

    /// ``check(_:)`` on `data`.
    public func check(_ data: Data) throws(FuzzFailure) {
        let result: Result<Void, FuzzFailure> = data.withUnsafeBytes { bytes in
            do throws(FuzzFailure) {
                try check(bytes)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// The body of `LLVMFuzzerTestOneInput`: checks the input and traps
    /// with the broken invariant, so libFuzzer saves the input as a crash.
    public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        do {
            try check(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
        } catch {
            fatalError("fuzz invariant broken: \(error)")
        }
        return 0
    }
}

/// Reads a fuzz input front to back as small decisions; past the end it
/// reads zeros, so every input, however short, is a complete script.
struct FuzzBytes {
    private let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// True while unread bytes remain.
    var hasMore: Bool { offset < bytes.count }

    /// Unread bytes.
    var remaining: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[min(offset, bytes.count)...])
    }

    /// The next byte, or 0 past the end.
    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The next byte as a choice among `count` (> 0) options.
    mutating func choice(_ count: Int) -> Int {
        Int(byte()) % count
    }

    /// One of `options` (not empty).
    mutating func pick<T>(_ options: [T]) -> T {
        options[choice(options.count)]
    }

    /// The next two bytes, big-endian.
    mutating func uint16() -> Int {
        Int(byte()) << 8 | Int(byte())
    }

    /// The next `count` bytes (fewer at the end).
    mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + count)
        guard offset < end else { return [] }
        defer { offset = end }
        return Array(bytes[offset..<end])
    }
}
