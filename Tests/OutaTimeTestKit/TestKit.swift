import Foundation
import OutaTimeProtocol
import Testing

/// A small deterministic generator (SplitMix64), so a test controls its
/// "random" values and a failure reproduces from its seed.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    public var state: UInt64

    /// A generator whose sequence depends only on `seed`.
    public init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension JSONValue {
    /// A random value: scalars at the leaves, objects and arrays above,
    /// strings with control characters, quotes and non-ASCII letters.
    public static func random(depth: Int, using generator: inout SeededGenerator) -> JSONValue {
        let pick = Int.random(in: 0..<(depth > 0 ? 8 : 6), using: &generator)
        switch pick {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2: return .int(Int64.random(in: Int64.min...Int64.max, using: &generator))
        case 3: return .double(Double.random(in: -1e6...1e6, using: &generator))
        case 4, 5:
            let scalars = (0..<Int.random(in: 0..<12, using: &generator)).map { _ in
                Unicode.Scalar(UInt32.random(in: 0..<0x250, using: &generator)) ?? "?"
            }
            return .string(String(String.UnicodeScalarView(scalars)))
        case 6:
            return .array((0..<Int.random(in: 0..<4, using: &generator)).map { _ in random(depth: depth - 1, using: &generator) })
        default:
            var object: [String: JSONValue] = [:]
            for index in 0..<Int.random(in: 0..<4, using: &generator) {
                object["k\(index)/\(Int.random(in: 0..<100, using: &generator))"] = random(depth: depth - 1, using: &generator)
            }
            return .object(object)
        }
    }
}

/// Encodes through `encode(to:)` even when the value is ``JSONWritable``,
/// so a test can compare a type's direct fields with its `Codable` path.
public struct ViaCodable<Value: Encodable & Sendable>: Encodable, Sendable {
    public let value: Value

    /// Wraps `value`.
    public init(value: Value) { self.value = value }

    /// Hands the encoder to the wrapped value's own `encode(to:)`.
    public func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

/// Expects a ``JSONWritable`` value's direct fields to be byte for byte what
/// its `Codable` conformance writes, and Foundation's encoding of it to read
/// back as the same JSON.
public func expectSameJSONBothWays(_ value: some JSONWritable & Sendable,
                                   sourceLocation: SourceLocation = #_sourceLocation) throws {
    let direct = String(decoding: try CompactJSONEncoder().encode(value), as: UTF8.self)
    let codable = String(decoding: try CompactJSONEncoder().encode(ViaCodable(value: value)), as: UTF8.self)
    #expect(direct == codable, sourceLocation: sourceLocation)
    let reference = try JSONValue.parse(try JSONEncoder().encode(value))
    #expect(try JSONValue.parse(Data(direct.utf8)) == reference, sourceLocation: sourceLocation)
}
