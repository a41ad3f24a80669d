import Foundation

extension JSONValue {
    /// Parses JSON text (any value at the top level) with Foundation's
    /// `JSONSerialization`.
    ///
    /// Same result as decoding with `JSONDecoder` (`Decodable` above), but
    /// about five times faster for objects: the `Decodable` path can only
    /// find a value's type by trying each case and catching the thrown
    /// mismatch, and every request goes through here (see docs/BENCHMARKS.md).
    /// Numbers follow the same rule: an integral value that fits in `Int64`
    /// is `.int`, any other number `.double`.
    ///
    /// - Throws: Foundation's error when `data` is not valid UTF-8 JSON.
    public static func parse(_ data: Data) throws -> JSONValue {
        JSONValue(foundation: try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]))
    }

    /// Converts what `JSONSerialization` returns.
    private init(foundation value: Any) {
        switch value {
        case let text as String:
            self = .string(text)
        case let object as [String: Any]:
            self = .object(object.mapValues(JSONValue.init(foundation:)))
        case let array as [Any]:
            self = .array(array.map(JSONValue.init(foundation:)))
        case let number as NSNumber:
            self = JSONValue(number: number)
        default:
            self = .null
        }
    }

    private init(number: NSNumber) {
        // The Objective-C type code tells booleans and integers from
        // floating point; `Q` is an unsigned integer above Int64.max.
        switch number.objCType.pointee {
        case CChar(UInt8(ascii: "c")), CChar(UInt8(ascii: "B")):
            self = .bool(number.boolValue)
        case CChar(UInt8(ascii: "Q")), CChar(UInt8(ascii: "L")):
            let value = number.uint64Value
            self = value <= UInt64(Int64.max) ? .int(Int64(value)) : .double(number.doubleValue)
        case CChar(UInt8(ascii: "d")), CChar(UInt8(ascii: "f")):
            // Numbers that a double does not hold exactly (negative integers
            // below -2^53, many decimals such as -924933.5400390625) come as
            // NSDecimalNumber, whose doubleValue is off in the last digits:
            // read its exact text instead.
            if let decimal = number as? NSDecimalNumber {
                let text = decimal.description
                if let integer = Int64(text) {
                    self = .int(integer)
                    return
                }
                let double = Double(text) ?? decimal.doubleValue
                // An integer literal beyond Int64 stays a double even where
                // rounding brings it to ±2^63.
                let isIntegerLiteral = !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
                self = isIntegerLiteral ? .double(double) : JSONValue(floatingPoint: double)
                return
            }
            self = JSONValue(floatingPoint: number.doubleValue)
        default:
            self = .int(number.int64Value)
        }
    }

    /// `.int` for an integral value that fits in `Int64`, else `.double`.
    private init(floatingPoint value: Double) {
        if value.rounded() == value, value >= -0x1p63, value < 0x1p63 {
            self = .int(Int64(value))
        } else {
            self = .double(value)
        }
    }
}
